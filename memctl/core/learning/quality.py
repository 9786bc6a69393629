"""Decide whether a text is worth storing as a memory: refuse small talk, scraps and raw dumps."""

from __future__ import annotations

import re
import unicodedata

# A CJK character carries about as much as a short English word, so it weighs as three letters:
# "我叫小明" (4 characters) passes the same bar as "Use pnpm, not npm" (13 letters).
CJK_WEIGHT = 3
# Text around a trace must say something (roughly one short sentence) to keep the trace.
MIN_STATEMENT_WEIGHT = 30

# Kana, CJK ideographs (with extensions A and B), compatibility ideographs, Hangul.
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002a6df]"
)

_SMALL_TALK = sorted(
    {
        # English acknowledgements, thanks, greetings
        "ok",
        "okay",
        "okey",
        "k",
        "kk",
        "ok ok",
        "yes",
        "yeah",
        "yep",
        "yup",
        "no",
        "nope",
        "nah",
        "sure",
        "sure thing",
        "fine",
        "alright",
        "all right",
        "right",
        "cool",
        "nice",
        "great",
        "awesome",
        "perfect",
        "excellent",
        "good",
        "very good",
        "good job",
        "well done",
        "wow",
        "lol",
        "haha",
        "hahaha",
        "hmm",
        "hm",
        "uh",
        "um",
        "oh",
        "ah",
        "i see",
        "makes sense",
        "got it",
        "gotcha",
        "understood",
        "noted",
        "ack",
        "roger",
        "roger that",
        "will do",
        "done",
        "sounds good",
        "looks good",
        "lgtm",
        "agreed",
        "exactly",
        "indeed",
        "of course",
        "thanks",
        "thank you",
        "thank you so much",
        "thanks a lot",
        "many thanks",
        "thx",
        "ty",
        "tysm",
        "cheers",
        "appreciate it",
        "much appreciated",
        "np",
        "no problem",
        "no worries",
        "you're welcome",
        "youre welcome",
        "welcome",
        "hi",
        "hello",
        "hey",
        "hey there",
        "yo",
        "good morning",
        "good afternoon",
        "good evening",
        "good night",
        "bye",
        "goodbye",
        "see you",
        "see ya",
        "later",
        "cya",
        "please",
        "pls",
        "go on",
        "continue",
        "next",
        "go ahead",
        "let's go",
        "lets go",
        "try again",
        "again",
        "and",
        "so",
        "then",
        "what",
        "why",
        "how",
        "really",
        "ok then",
        "yes please",
        "no thanks",
        "great thanks",
        # Chinese
        "好",
        "好的",
        "好滴",
        "好哒",
        "好吧",
        "好啊",
        "好呀",
        "行",
        "行吧",
        "可以",
        "可以的",
        "没问题",
        "嗯",
        "嗯嗯",
        "嗯呢",
        "哦",
        "哦哦",
        "噢",
        "啊",
        "呃",
        "额",
        "哈",
        "哈哈",
        "哈哈哈",
        "呵呵",
        "谢谢",
        "谢谢你",
        "谢谢您",
        "谢啦",
        "多谢",
        "感谢",
        "非常感谢",
        "辛苦了",
        "辛苦",
        "不客气",
        "收到",
        "明白",
        "明白了",
        "知道了",
        "懂了",
        "了解",
        "了解了",
        "好的收到",
        "对",
        "对的",
        "是的",
        "是",
        "不是",
        "不",
        "不用",
        "不用了",
        "算了",
        "继续",
        "再来",
        "你好",
        "您好",
        "早",
        "早上好",
        "晚安",
        "再见",
        "拜拜",
        "在吗",
        "在",
        "棒",
        "太棒了",
        "厉害",
        "牛",
    },
    key=len,
    reverse=True,
)
_SMALL_TALK_SET = frozenset(_SMALL_TALK)

_PY_FRAME = re.compile(r'^\s*File "[^"]+", line \d+')
_RUST_PANIC = re.compile(r"^\s*thread '.*' panicked at ")
_TRACE_LINE = re.compile(
    r"""^\s*(?:
        Traceback\ \(most\ recent\ call\ last\):
      | During\ handling\ of\ the\ above\ exception.*
      | The\ above\ exception\ was\ the\ direct\ cause.*
      | [~^\s]*\^[~^\s]*                                     # Python caret markers
      | at\ .+\(.*:\d+(?::\d+)?\)                           # JS frame with location, Java frame
      | at\ (?:async\ )?[^\s()]+:\d+:\d+                      # JS frame without a name
      | at\ [\w$.<>]+\((?:Native\ Method|Unknown\ Source|[\w$.-]+\.\w+(?::\d+)?)\)
      | at\ <anonymous>
      | \.\.\.\ \d+\ (?:more|common\ frames\ omitted)
      | Caused\ by:\ .*
      | Suppressed:\ .*
      | Exception\ in\ thread\ .*
      | (?:Uncaught\ )?(?:[\w$]+\.)*[\w$]*(?:Error|Exception|Exit|Interrupt|Warning|Fault)(?::.*)?
      | panic:\ .*
      | goroutine\ \d+\ \[.*\]:
      | /\S+\.go:\d+(?:\ \+0x[0-9a-f]+)?
      | note:\ run\ with\ `RUST_BACKTRACE.*
      | \d+:\ +(?:0x[0-9a-f]+\ -\ )?[\w<>$]+(?:::[\w<>${}#]+)+.*  # Rust backtrace frame
      | Segmentation\ fault.*
      | core\ dumped.*
    )\s*$""",
    re.VERBOSE,
)
_FRAME_LINE = re.compile(
    r'^\s*(?:File "[^"]+", line \d+|at\s|\.\.\. \d+ more|goroutine \d+|/\S+\.go:\d+'
    r"|\d+: +[\w<>$]+::)"
)
_GO_LOCATION = re.compile(r"^\s+/\S+\.go:\d+")
_LOG_LINE = re.compile(
    r"""^\s*(?:
        \[?\d{4}-\d{2}-\d{2}[T\ ]\d{2}:\d{2}:\d{2}\S*\]?     # ISO timestamp
      | \[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?                   # clock time
      | [A-Z][a-z]{2}\ [\ \d]\d\ \d{2}:\d{2}:\d{2}            # syslog
      | \[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE)\]?[:\s]
      | \d+\.\d+\.\d+\.\d+\ -\ \S+\ \[                          # access log
    )""",
    re.VERBOSE,
)


def content_weight(text: str) -> int:
    """Letters and digits, with each CJK character counted as CJK_WEIGHT."""
    cjk = len(_CJK.findall(text))
    other = sum(1 for c in text if c.isalnum()) - cjk
    return other + cjk * CJK_WEIGHT


def low_value_reason(text: str, min_chars: int = 12) -> str | None:
    """Why `text` is not worth remembering, as a sentence for the user; None to keep it."""
    stripped = (text or "").strip()
    if not stripped:
        return "the text is empty"
    words = _normalise(stripped)
    if not words:
        return "the text has no words, only punctuation or symbols"
    if _is_small_talk(words):
        return f"this is small talk with nothing to remember ({_quote(stripped)})"
    dump = _dump_kind(stripped)
    if dump:
        return (
            f"this is a raw {dump} with no statement around it; add a sentence saying what it "
            "means or how it was fixed"
        )
    weight = content_weight(stripped)
    if weight < min_chars:
        note = f" (a Chinese character counts as {CJK_WEIGHT})" if _CJK.search(stripped) else ""
        return (
            f"the text is too short to be worth remembering: {weight} characters of content, "
            f"at least {min_chars} needed{note}"
        )
    return None


def _normalise(text: str) -> str:
    """Lower-case, punctuation and emoji turned into spaces, whitespace collapsed."""
    kept = []
    for ch in unicodedata.normalize("NFKC", text).lower():
        kept.append(ch if ch.isalnum() or ch == "'" else " ")
    return " ".join("".join(kept).replace("'", "").split())


def _is_small_talk(words: str) -> bool:
    """True if the text is made only of small-talk phrases ("ok thanks", "好的谢谢")."""
    if words in _SMALL_TALK_SET:
        return True
    rest = words.replace(" ", "") if _CJK.search(words) else words
    if len(rest) > 60:
        return False
    return _consume(rest, words_mode=not _CJK.search(words))


def _consume(rest: str, words_mode: bool) -> bool:
    while rest:
        for phrase in _SMALL_TALK:
            candidate = phrase.replace("'", "")
            if not words_mode:
                candidate = candidate.replace(" ", "")
            if rest == candidate or (
                rest.startswith(candidate) and (not words_mode or rest[len(candidate)] == " ")
            ):
                rest = rest[len(candidate) :].lstrip()
                break
        else:
            return False
    return True


def _dump_kind(text: str) -> str | None:
    """'stack trace', 'log dump' or 'error dump' if the text is one and says almost nothing else."""
    lines = [
        line for line in text.splitlines() if line.strip() and not line.strip().startswith("```")
    ]
    trace = frames = logs = 0
    statement: list[str] = []
    detail_expected = False  # Python prints the source line under a frame; Rust the panic message
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and _GO_LOCATION.match(lines[i + 1]):
            trace += 1  # the function line Go prints above each file:line
            continue
        if detail_expected and (line[:1].isspace() or _RUST_PANIC.match(lines[i - 1])):
            trace += 1
            detail_expected = False
            continue
        if _PY_FRAME.match(line) or _RUST_PANIC.match(line):
            trace += 1
            frames += 1
            detail_expected = True
            continue
        detail_expected = False
        if _TRACE_LINE.match(line):
            trace += 1
            frames += bool(_FRAME_LINE.match(line))
        elif _LOG_LINE.match(line):
            logs += 1
        else:
            statement.append(line)
    if content_weight(" ".join(statement)) >= MIN_STATEMENT_WEIGHT:
        return None
    if frames >= 1 and trace >= 2:
        return "stack trace"
    if trace + logs >= 3 and logs >= 1:
        return "log dump"
    if trace >= 3:
        return "error dump"
    return None


def _quote(text: str) -> str:
    return f'"{text}"' if len(text) <= 40 else f'"{text[:37]}..."'
