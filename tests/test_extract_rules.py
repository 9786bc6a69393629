import re
from pathlib import Path

import pytest

from memctl.agents.transcripts import read_conversation_file
from memctl.core.learning.conversation import Turn
from memctl.core.learning.extract_rules import extract_candidates, extract_sentence

FIXTURES = Path(__file__).parent / "fixtures" / "conversations"


def one(sentence: str, role: str = "user"):
    found = extract_sentence(sentence, role)
    assert len(found) == 1, found
    return found[0]


def by_text(candidates, fragment):
    matches = [c for c in candidates if fragment in c.text]
    assert matches, f"no candidate containing {fragment!r} in {[c.text for c in candidates]}"
    return matches[0]


def test_claude_code_session_yields_the_stated_memories():
    candidates = extract_candidates(read_conversation_file(FIXTURES / "claude_code_session.jsonl"))

    assert by_text(candidates, "name is Ana").type == "profile"
    assert by_text(candidates, "prefers small, focused diffs").type == "preference"
    decision = by_text(candidates, "decided to use Decimal")
    assert (decision.type, decision.confidence) == ("semantic", 0.9)
    rule = by_text(candidates, "Always run `make check`")
    assert (rule.type, rule.confidence) == ("procedural", 0.9)
    fact = by_text(candidates, "CI runners use Python 3.11")
    assert fact.type == "semantic"
    assert fact.evidence == "Also, remember that the CI runners use Python 3.11, not 3.12."
    assert by_text(candidates, "Never add new dependencies").type == "procedural"
    # A decision stated by the assistant counts; its "I" is not the user.
    agreed = by_text(candidates, "agreed to keep this fix limited")
    assert "user" not in agreed.text
    # Nothing comes from tool output or from what the assistant merely said.
    assert not any("212" in c.text or "ROUND_HALF_EVEN" in c.text for c in candidates)
    assert all(c.source == "explicit_user_input" for c in candidates)


def test_chinese_conversation():
    candidates = extract_candidates(read_conversation_file(FIXTURES / "chinese.txt"))
    texts = [c.text for c in candidates]

    assert by_text(candidates, "用户叫李娜").subject_key == "profile:name"
    assert by_text(candidates, "用户是前端工程师").type == "profile"
    assert by_text(candidates, "决定用Vite替换Webpack").type == "semantic"
    assert by_text(candidates, "以后请用中文回复").type == "procedural"
    assert by_text(candidates, "测试环境的端口是8443").type == "semantic"
    assert by_text(candidates, "不要提交.env文件").type == "procedural"
    assert by_text(candidates, "用户喜欢深色主题").type == "preference"
    # The assistant's "以后都用中文" is an acknowledgement, not a decision of its own.
    assert not any("以后都用中文" in t for t in texts)
    # "好的，就这么办。谢谢！" is small talk.
    assert not any("谢谢" in t for t in texts)


def test_role_content_jsonl_profile_and_decisions():
    candidates = extract_candidates(read_conversation_file(FIXTURES / "messages.jsonl"))
    assert by_text(candidates, "The user is a mobile developer").subject_key == "profile:role"
    assert by_text(candidates, "The user works at Orbit Labs").subject_key == "profile:employer"
    assert by_text(candidates, "will use WorkManager").type == "semantic"
    assert by_text(candidates, "Never store auth tokens").type == "procedural"
    # The system prompt is not the user speaking.
    assert not any("Orbit mobile app team" in c.text for c in candidates)


def test_text_is_a_third_person_sentence_built_only_from_the_evidence():
    turns = [
        Turn(
            "user",
            (
                "I always use vim. My timezone is UTC+8. I don't like ORMs because they hide the SQL. "
                "Don't ever commit node_modules. Note that my laptop runs Arch Linux. "
                "I've decided nothing yet. I'm a data scientist and I live in Lisbon."
            ),
        )
    ]
    candidates = extract_candidates(turns)
    assert [c.text for c in candidates] == [
        "The user always uses vim.",
        "The user's timezone is UTC+8.",
        "The user doesn't like ORMs because they hide the SQL.",
        "Never commit node_modules.",
        "The user's laptop runs Arch Linux.",
        "The user is a data scientist.",
        "The user lives in Lisbon.",
    ]
    allowed = {"the", "user", "user's", "they", "their", "them", "is", "has", "doesn't", "never"}

    def words(text):
        return [w.strip(".") for w in re.findall(r"[\w'+.-]+", text.lower())]

    for candidate in candidates:
        said = set(words(candidate.evidence))
        for word in words(candidate.text):
            stems = {word, word[:-1], word[:-2], word[:-3] + "y"}
            assert word in allowed or stems & said, (word, candidate)


@pytest.mark.parametrize(
    "sentence",
    [
        "Do you prefer tabs?",
        "Should we always use tabs",
        "I like it.",
        "I like that.",
        "I'd like you to fix the login bug.",
        "What I like about this is the speed.",
        "Never mind.",
        "Always a pleasure.",
        "I'm a bit tired today.",
        "To be honest, run it again.",
        "The build failed with exit code 2.",
        "我喜欢这个。",
        "不要担心。",
        "我是说这个不对。",
        "你喜欢什么？",
    ],
)
def test_no_candidate_without_an_explicit_statement(sentence):
    assert extract_sentence(sentence) == []


def test_only_decisions_are_taken_from_the_assistant():
    assert extract_sentence("I prefer to answer in bullet points.", "assistant") == []
    assert extract_sentence("Always run the linter.", "assistant") == []
    decision = one("We decided to pin numpy below 2.0.", "assistant")
    assert decision.type == "semantic"
    assert extract_sentence("I prefer tabs.", "system") == []
    assert extract_sentence("I prefer tabs.", "tool") == []


def test_confidence_follows_cue_strength():
    always = one("Always run the tests before committing.")
    prefer = one("I prefer tabs for indentation.")
    like = one("I like Python.")
    assert always.confidence > prefer.confidence > like.confidence
    assert (always.confidence, prefer.confidence, like.confidence) == (0.9, 0.85, 0.7)
    # "remember that" around a preference keeps the type and raises the confidence.
    remembered = one("Remember that I prefer short answers.")
    assert (remembered.type, remembered.confidence) == ("preference", 0.9)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I prefer tabs for indentation.", "I prefer spaces."),
        (
            "Remember that the staging DB is on port 5433.",
            "Remember that the staging DB is on port 6543.",
        ),
        (
            "We decided to use PostgreSQL for the event store.",
            "We decided to use SQLite for the event store.",
        ),
        ("My name is Ana.", "Call me Ana Souza."),
        ("Always use pnpm.", "Always use npm in this repo."),
        ("Never store tokens in SharedPreferences.", "Always store tokens in the keystore."),
        ("我喜欢深色主题。", "我更喜欢浅色主题。"),
        ("记住测试环境的端口是8443。", "记住测试环境的端口是9443。"),
    ],
)
def test_same_subject_with_a_different_value_shares_the_subject_key(first, second):
    a, b = one(first), one(second)
    assert a.subject_key == b.subject_key
    assert a.text != b.text


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I like Python.", "I like Rust."),
        ("My name is Ana.", "I live in Lisbon."),
        (
            "Remember that the staging DB is on port 5433.",
            "Remember that the CI runners use Python 3.11.",
        ),
        ("To deploy, run `make deploy`.", "To roll back, run `make rollback`."),
    ],
)
def test_different_subjects_have_different_keys(first, second):
    assert one(first).subject_key != one(second).subject_key


def test_procedures_and_lessons():
    deploy = one("To deploy, run `make deploy ENV=prod`.")
    assert (deploy.type, deploy.subject_key) == ("procedural", "procedure:deploy")
    assert deploy.text == "To deploy, run `make deploy ENV=prod`."
    assert one("Lesson learned: pin numpy below 2.0 in CI.").type == "procedural"
    assert one("It turned out the cache was stale.").type == "semantic"
    assert one("部署的方法是运行make deploy。").type == "procedural"
    assert one("From now on, write commit messages in English.").type == "procedural"


def test_repeats_are_merged_and_order_is_stable():
    turns = [
        Turn("user", "I prefer tabs for indentation."),
        Turn("assistant", "Noted, tabs it is."),
        Turn("user", "Never push to main. Remember: I prefer tabs for indentation."),
        Turn("user", "I prefer tabs for indentation."),
    ]
    candidates = extract_candidates(turns)
    assert [c.text for c in candidates] == [
        "The user prefers tabs for indentation.",
        "Never push to main.",
    ]
    # The repeat said with "remember" raised the confidence of the first statement.
    assert candidates[0].confidence == 0.9
    assert extract_candidates(turns) == candidates


def test_code_blocks_are_not_statements():
    turn = Turn("user", "Here is the script:\n```python\n# always use globals\nx = 1\n```\nThanks.")
    assert extract_candidates([turn]) == []
