from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl.core.errors import UsageError
from memctl.core.redaction.redact import KINDS, redact

FIXTURES = Path(__file__).parent / "fixtures" / "redaction"
POSITIVES = [
    json.loads(line)
    for line in (FIXTURES / "positives.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
CLEAN_LINES = (FIXTURES / "clean.txt").read_text(encoding="utf-8").splitlines()


def test_fixtures_are_big_enough_and_cover_every_kind():
    assert len(POSITIVES) >= 50
    assert len(CLEAN_LINES) >= 200
    covered = {kind for row in POSITIVES for kind in row["kinds"]}
    assert covered == set(KINDS)


@pytest.mark.parametrize("row", POSITIVES, ids=[f"line{i + 1}" for i in range(len(POSITIVES))])
def test_every_positive_is_redacted_with_its_typed_placeholder(row):
    result = redact(row["text"])
    assert row["secret"] not in result.text
    for kind in row["kinds"]:
        assert f"[REDACTED_{kind.upper()}]" in result.text
        assert result.counts.get(kind, 0) >= 1


def test_clean_corpus_is_not_touched_line_by_line():
    changed = [
        (number, line, redact(line).text)
        for number, line in enumerate(CLEAN_LINES, start=1)
        if redact(line).counts
    ]
    assert changed == []


def test_clean_corpus_is_not_touched_as_one_document():
    text = "\n".join(CLEAN_LINES)
    result = redact(text)
    assert result.counts == {}
    assert result.text == text


def test_counts_report_kinds_and_numbers_never_values():
    result = redact("Mail ana@example.com or bo@example.org; the box is 203.0.113.5.")
    assert result.counts == {"email": 2, "ipv4": 1}
    assert result.total == 3
    assert result.text == "Mail [REDACTED_EMAIL] or [REDACTED_EMAIL]; the box is [REDACTED_IPV4]."


def test_nothing_to_redact_gives_empty_counts_and_same_text():
    result = redact("We decided to use LanceDB for the index.")
    assert result.counts == {}
    assert result.text == "We decided to use LanceDB for the index."


def test_assignment_keeps_the_key_name():
    assert redact("DB_PASSWORD=s3cr3t!").text == "DB_PASSWORD=[REDACTED_SECRET_ASSIGNMENT]"
    assert redact('{"password": "hunter2"}').text == '{"password": "[REDACTED_SECRET_ASSIGNMENT]"}'


def test_most_specific_kind_wins_and_is_counted_once():
    result = redact("OPENAI_API_KEY=sk-proj-FAKE0123456789abcdefEXAMPLE")
    assert result.counts == {"api_key": 1}
    assert result.text == "OPENAI_API_KEY=[REDACTED_API_KEY]"


def test_private_key_block_goes_whole_and_following_text_stays():
    text = (
        "key:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIFAKEfakeFAKEfake0000\n"
        "AwEHoUQDQgAEfake1111\n-----END EC PRIVATE KEY-----\nthen restart nginx"
    )
    result = redact(text)
    assert result.text == "key:\n[REDACTED_PRIVATE_KEY]\nthen restart nginx"
    assert result.counts == {"private_key": 1}


@pytest.mark.parametrize(
    "valid, invalid",
    [
        ("4111 1111 1111 1111", "4111 1111 1111 1112"),  # Luhn
        ("110105199003071239", "110105199003071230"),  # GB 11643 check character
        ("203.0.113.7", "203.0.113.256"),  # octet range
    ],
)
def test_checksums_and_ranges_decide(valid, invalid):
    assert redact(f"value {valid} here").counts
    assert redact(f"value {invalid} here").counts == {}


def test_values_glued_to_chinese_text_are_found():
    result = redact("邮箱john@example.com，手机13800138000")
    assert result.text == "邮箱[REDACTED_EMAIL]，手机[REDACTED_PHONE]"


def test_redacting_twice_changes_nothing_more():
    once = redact("\n".join(row["text"] for row in POSITIVES))
    twice = redact(once.text)
    assert twice.counts == {}
    assert twice.text == once.text


def test_disabled_kinds_are_left_alone():
    text = "ana@example.com, +1 415-555-0132"
    result = redact(text, disabled=["email"])
    assert "ana@example.com" in result.text
    assert "[REDACTED_PHONE]" in result.text
    assert result.counts == {"phone": 1}


def test_disabling_every_kind_changes_nothing():
    text = "\n".join(row["text"] for row in POSITIVES)
    result = redact(text, disabled=KINDS)
    assert result.text == text
    assert result.counts == {}


def test_unknown_disabled_kind_is_a_usage_error():
    with pytest.raises(UsageError, match="emial"):
        redact("x", disabled=["emial"])


def test_extra_pattern_gets_its_own_placeholder_and_count():
    result = redact(
        "Ticket for EMP-004211 and EMP-009876.",
        extra_patterns={"employee_id": r"EMP-\d{6}"},
    )
    assert result.text == "Ticket for [REDACTED_EMPLOYEE_ID] and [REDACTED_EMPLOYEE_ID]."
    assert result.counts == {"employee_id": 2}


def test_extra_pattern_with_value_group_replaces_only_the_value():
    result = redact("vault_pin=8812 ok", extra_patterns={"pin": r"vault_pin=(?P<value>\d+)"})
    assert result.text == "vault_pin=[REDACTED_PIN] ok"


def test_extra_pattern_can_be_disabled_by_name():
    text = "EMP-004211"
    result = redact(text, extra_patterns={"employee_id": r"EMP-\d{6}"}, disabled=["employee_id"])
    assert result.text == text


def test_invalid_extra_regex_is_a_usage_error_naming_the_pattern():
    with pytest.raises(UsageError) as caught:
        redact("x", extra_patterns={"broken_rule": "(unclosed"})
    assert "broken_rule" in str(caught.value)
    assert caught.value.exit_code == 2


def test_extra_pattern_name_must_fit_a_placeholder():
    with pytest.raises(UsageError, match="bad name"):
        redact("x", extra_patterns={"bad name": "x"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GB29NWBK60161331926819", "[REDACTED_IBAN]"),
        ("IBAN: FR1420041010050500013M02606.", "IBAN: [REDACTED_IBAN]."),
        ("to DE89 3704 0044 0532 0130 00 today", "to [REDACTED_IBAN] today"),
        (
            "AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "[REDACTED_AWS_KEY] and [REDACTED_AWS_KEY]",
        ),
        ("aws_secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret [REDACTED_AWS_KEY]"),
        ("password=Tr0ub4dor&3xK", "password=[REDACTED_SECRET_ASSIGNMENT]"),
        ("password=Tr0ub#4dor/3x ok", "password=[REDACTED_SECRET_ASSIGNMENT] ok"),
        ("DB_PASSWORD=ab\"cd'ef9 next", "DB_PASSWORD=[REDACTED_SECRET_ASSIGNMENT] next"),
        ('echo "password=hunter2x" done', 'echo "password=[REDACTED_SECRET_ASSIGNMENT]" done'),
        ("pin password: 4921 7730 1183 ok", "pin password: [REDACTED_SECRET_ASSIGNMENT] ok"),
        (
            "https://h/?api_key=abc123def&page=2",
            "https://h/?api_key=[REDACTED_SECRET_ASSIGNMENT]&page=2",
        ),
    ],
)
def test_a_secret_goes_whole_to_its_end(text, expected):
    assert redact(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        "GB29NWBK60161331926818",  # one digit off: the mod-97 check fails
        "DE88370400440532013000",
        "XX29NWBK60161331926819",  # no such country
        "sha1 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 of the release",
        "the digest is c2VjcmV0IGRpZ2VzdCBvZiB0aGUgZmlsZSBjb250ZW50cw== here",
    ],
)
def test_lookalikes_of_accounts_and_keys_stay(text):
    assert redact(text).text == text
