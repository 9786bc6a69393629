from pathlib import Path

import numpy as np
import pytest

from memctl.agents.transcripts import read_conversation_file
from memctl.core.learning.summarize import (
    find_decisions,
    find_outcomes,
    key_topics,
    split_sentences,
    summarize,
)

FIXTURES = Path(__file__).parent / "fixtures" / "conversations"


def conversation_text(name: str) -> str:
    return "\n".join(turn.content for turn in read_conversation_file(FIXTURES / name))


# --- sentences ----------------------------------------------------------------------------


def test_split_sentences_english():
    text = (
        "Dr. Smith approved it, e.g. for the 3.14 release. It fails 2 out of 50 runs. "
        "settle() rounds every amount! Is that right? Yes."
    )
    assert split_sentences(text) == [
        "Dr. Smith approved it, e.g. for the 3.14 release.",
        "It fails 2 out of 50 runs.",
        "settle() rounds every amount!",
        "Is that right?",
        "Yes.",
    ]


def test_split_sentences_chinese_and_mixed():
    assert split_sentences("首屏要6秒左右。我们决定用Vite！要改吗？好的!下一步") == [
        "首屏要6秒左右。",
        "我们决定用Vite！",
        "要改吗？",
        "好的!",
        "下一步",
    ]


def test_split_sentences_lists_and_wrapped_lines():
    text = (
        "Plan:\n- migrate the schema\n- switch traffic\n\n"
        "This line is wrapped\nacross two lines. Done."
    )
    assert split_sentences(text) == [
        "Plan:",
        "migrate the schema",
        "switch traffic",
        "This line is wrapped across two lines.",
        "Done.",
    ]


# --- summaries ----------------------------------------------------------------------------


def test_summary_keeps_names_numbers_and_decisions():
    text = conversation_text("migration_planning.txt")
    summary = summarize(text)

    assert "Maria Chen" in summary
    assert "We decided to move billing to PostgreSQL 16 on the managed service." in summary
    assert "March 14" in summary
    assert "340 GB" in summary
    assert "48 hours" in summary
    for small_talk in ("Okay.", "Got it.", "Thanks.", "You're welcome."):
        assert small_talk not in split_sentences(summary)
    assert 0.2 <= len(summary) / len(text) <= 0.3


def test_summary_of_a_coding_session_keeps_its_decision_and_result():
    summary = summarize(conversation_text("claude_code_session.jsonl"))
    assert "We decided to use Decimal everywhere money is computed." in summary
    assert "2 out of 50" in summary


def test_summary_of_a_chinese_conversation():
    text = conversation_text("chinese.txt")
    summary = summarize(text)
    assert "我们决定用Vite替换Webpack" in summary
    assert "8443" in summary
    assert len(summary) < 0.35 * len(text)


def test_summary_is_made_of_input_sentences_in_their_order():
    text = conversation_text("migration_planning.txt")
    sentences = split_sentences(text)
    picked = split_sentences(summarize(text))
    positions = [sentences.index(s) for s in picked]
    assert positions == sorted(positions)
    assert summarize(text) == summarize(text)


def test_ratio_and_max_sentences():
    text = conversation_text("migration_planning.txt")
    short, long = summarize(text, ratio=0.1), summarize(text, ratio=0.5)
    assert len(short) < len(long)
    assert len(long) <= 0.55 * len(text)
    assert len(split_sentences(summarize(text, max_sentences=2))) == 2


def test_summary_accepts_a_list_of_sentences():
    sentences = ["We decided to ship on Friday.", "ok", "The release is version 2.4."]
    summary = summarize(sentences, ratio=1.0)
    assert summary == "We decided to ship on Friday. The release is version 2.4."
    assert summarize([]) == ""
    assert summarize("") == ""


def test_embedding_centrality_replaces_lexical_centrality():
    # Sentence 4 shares words with all others (lexically central); the embeddings say
    # sentences 0-3 are about one thing and sentence 4 is an outlier.
    sentences = [
        "apples grow on trees in the orchard",
        "pears ripen slowly near the garden wall",
        "plums fall early during a dry summer",
        "cherries need careful picking by hand",
        "apples pears plums cherries garden orchard summer picking",
    ]
    vectors = {s: np.array([1.0, 0.1 * i, 0.0]) for i, s in enumerate(sentences[:4])}
    vectors[sentences[4]] = np.array([0.0, 0.0, 1.0])
    calls = []

    def embed(batch):
        calls.append(list(batch))
        return np.stack([vectors[s] for s in batch])

    lexical = summarize(sentences, max_sentences=1)
    embedded = summarize(sentences, max_sentences=1, embed=embed)
    assert lexical == sentences[4]
    assert embedded in sentences[:4]
    assert calls == [sentences]


def test_embed_must_return_one_vector_per_sentence():
    with pytest.raises(ValueError):
        summarize(["one sentence here.", "another one here."], embed=lambda b: np.zeros((1, 3)))


# --- topics, decisions, outcomes ----------------------------------------------------------


def test_key_topics():
    topics = key_topics(conversation_text("migration_planning.txt"), n=5)
    assert len(topics) == 5
    assert "PostgreSQL" in topics and "MySQL" in topics
    assert not {"the", "and", "we", "user"} & {t.lower() for t in topics}
    assert "Vite" in key_topics(conversation_text("chinese.txt"))


def test_find_decisions_and_outcomes():
    planning = conversation_text("migration_planning.txt")
    decisions = find_decisions(planning)
    assert "We decided to move billing to PostgreSQL 16 on the managed service." in decisions
    assert "Nice, we will keep the old database for 48 hours then." in decisions
    assert not any(d.endswith("?") for d in decisions)
    assert "Agreed." not in decisions

    session = conversation_text("claude_code_session.jsonl")
    assert "make check passes: 212 tests, lint clean." in find_outcomes(session)
    assert find_decisions(conversation_text("chinese.txt")) == [
        "我们决定用Vite替换Webpack，先从构建速度入手。"
    ]
