from __future__ import annotations

import pytest

from memctl.core.learning.quality import low_value_reason

PYTHON_TRACE = """Traceback (most recent call last):
  File "/srv/app/main.py", line 42, in <module>
    run()
  File "/srv/app/main.py", line 12, in run
    value = int(raw)
ValueError: invalid literal for int() with base 10: 'abc'"""

JS_TRACE = """TypeError: Cannot read properties of undefined (reading 'map')
    at render (src/App.jsx:12:19)
    at renderWithHooks (node_modules/react-dom/cjs/react-dom.development.js:16305:18)
    at async Promise.all (index 0)"""

JAVA_TRACE = """Exception in thread "main" java.lang.NullPointerException: name is null
\tat com.example.billing.Invoice.total(Invoice.java:57)
\tat com.example.billing.Main.main(Main.java:12)
Caused by: java.lang.IllegalStateException: not initialised
\t... 2 more"""

GO_TRACE = """panic: runtime error: index out of range [3] with length 3

goroutine 1 [running]:
main.main()
\t/home/dev/app/main.go:12 +0x1d
exit status 2"""

RUST_TRACE = """thread 'main' panicked at src/main.rs:4:5:
called `Option::unwrap()` on a `None` value
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"""

LOG_DUMP = """2024-01-15 10:00:01,120 INFO  worker: starting
2024-01-15 10:00:02,004 INFO  db: connected to primary
2024-01-15 10:00:05,771 ERROR db: timeout after 3000 ms
2024-01-15 10:00:06,002 WARN  worker: retrying (1/5)"""


@pytest.mark.parametrize(
    "text",
    [
        "ok",
        "OK!",
        "Thanks!",
        "thank you so much",
        "got it",
        "ok, got it, thanks 👍",
        "lgtm",
        "好的",
        "谢谢",
        "嗯",
        "嗯嗯",
        "好的，谢谢！",
        "收到",
        "ok 谢谢",
    ],
)
def test_small_talk_is_refused(text):
    reason = low_value_reason(text)
    assert reason is not None and "small talk" in reason


@pytest.mark.parametrize("text", ["", "   \n\t", "👍👍", "...", "?!"])
def test_empty_or_symbol_only_is_refused(text):
    assert low_value_reason(text) is not None


@pytest.mark.parametrize("text", ["fix it", "测试", "see above", "用pnpm"])
def test_too_short_is_refused_with_the_numbers(text):
    reason = low_value_reason(text)
    assert reason is not None and "too short" in reason and "12" in reason


@pytest.mark.parametrize(
    "text",
    [
        "Use pnpm, not npm",
        "我叫小明",
        "以后请用中文回复",
        "我们决定用 LanceDB",
        "Staging DB runs on port 5433.",
        "Always run make lint before pushing.",
        "ok, and remember that the staging DB runs on port 5433",
        "好的，以后用pnpm",
        "thanks, that fixed the cache bug",
    ],
)
def test_short_but_meaningful_statements_are_kept(text):
    assert low_value_reason(text) is None


def test_min_chars_is_the_threshold():
    assert low_value_reason("Prefer tabs") is not None
    assert low_value_reason("Prefer tabs", min_chars=8) is None


@pytest.mark.parametrize("trace", [PYTHON_TRACE, JS_TRACE, JAVA_TRACE, GO_TRACE, RUST_TRACE])
def test_bare_stack_traces_are_refused(trace):
    reason = low_value_reason(trace)
    assert reason is not None and "stack trace" in reason


def test_log_dump_is_refused():
    reason = low_value_reason(LOG_DUMP)
    assert reason is not None and "log dump" in reason


def test_trace_with_a_filler_line_is_still_refused():
    assert low_value_reason("Here is the error:\n" + PYTHON_TRACE) is not None
    assert low_value_reason("```\n" + JS_TRACE + "\n```") is not None


def test_trace_with_a_statement_around_it_is_kept():
    text = (
        "The importer crashes when the CSV has an empty amount column; fixed by defaulting to 0 "
        "in parse_amount().\n" + PYTHON_TRACE
    )
    assert low_value_reason(text) is None


def test_chinese_statement_around_a_trace_is_kept():
    text = "导入CSV时金额列为空会崩溃，已在parse_amount里默认成0修复。\n" + JS_TRACE
    assert low_value_reason(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "Deploy steps:\n1: build the image\n2: push it\n3: run migrations",
        "Release checklist:\nmake_build()\nrun_tests()\ndeploy()",
        "ValueError from int() means the CSV still has thousands separators; strip commas first.",
        "Error handling: wrap every DB call in retry_with_backoff().",
    ],
)
def test_code_and_lists_are_not_mistaken_for_dumps(text):
    assert low_value_reason(text) is None
