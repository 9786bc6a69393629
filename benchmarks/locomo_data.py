"""Read LoCoMo conversations into turns and scorable questions (pure; no memctl imports)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from benchmarks.scoring import CATEGORY_NAMES, clean_question_evidence

_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    occurred_at: str | None  # ISO time of the session, UTC
    caption: str | None = None

    def memory_text(self) -> str:
        """How a person's own note of this turn would read: who said it, and what a shared photo showed."""
        words = self.text.strip()
        if self.caption:
            photo = f"[shares a photo: {self.caption.strip()}]"
            words = f"{words} {photo}" if words else photo
        return f"{self.speaker}: {words}"


@dataclass(frozen=True)
class Question:
    text: str
    category: str
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    cleaning: Counter = field(default_factory=Counter)
    questions_total: int = 0


def parse_session_time(value: str | None) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00Z'; None when the text is not in that shape."""
    if not value:
        return None
    text = " ".join(str(value).replace(",", " ").split())
    for fmt in ("%I:%M %p on %d %B %Y", "%H:%M on %d %B %Y", "%d %B %Y"):
        try:
            return datetime.strptime(text, fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    return None


def read_turns(conversation: dict) -> list[Turn]:
    """Every turn of every session that exists, in session order (some date keys have no session)."""
    sessions = sorted(
        (int(m.group(1)), key) for key in conversation if (m := _SESSION_KEY.fullmatch(key))
    )
    turns: list[Turn] = []
    for number, key in sessions:
        occurred = parse_session_time(conversation.get(f"{key}_date_time"))
        for raw in conversation[key] or []:
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]).strip(),
                    speaker=str(raw.get("speaker", "")).strip(),
                    text=str(raw.get("text", "")),
                    session=number,
                    occurred_at=occurred,
                    caption=raw.get("blip_caption") or None,
                )
            )
    return turns


def read_conversation(sample: dict) -> Conversation:
    """One sample's turns and its questions with cleaned evidence; unscorable questions are counted, not kept."""
    conv = sample["conversation"]
    turns = read_turns(conv)
    existing = {turn.dia_id for turn in turns}
    cleaning: Counter = Counter()
    questions: list[Question] = []
    for qa in sample.get("qa", []):
        cleaned = clean_question_evidence(qa.get("evidence") or [], existing)
        cleaning.update(cleaned.counts)
        if not cleaned.ids:
            continue
        category = CATEGORY_NAMES.get(int(qa["category"]), f"category-{qa['category']}")
        questions.append(Question(str(qa["question"]), category, tuple(cleaned.ids)))
    return Conversation(
        sample_id=str(sample.get("sample_id", "")),
        speakers=(conv.get("speaker_a", ""), conv.get("speaker_b", "")),
        turns=turns,
        questions=questions,
        cleaning=cleaning,
        questions_total=len(sample.get("qa", [])),
    )


def load_conversations(path: Path) -> list[Conversation]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise TypeError(
            f"{path}: expected a JSON list of LoCoMo samples, found {type(data).__name__}"
        )
    return [read_conversation(sample) for sample in data]


# The categories whose questions ask about one fact; two of them make one two-part question.
ONE_FACT_CATEGORIES = ("single-hop", "temporal")


def session_of(dia_id: str) -> str:
    """'D3:12' -> 'D3'."""
    return dia_id.split(":", 1)[0]


def two_part(conv: Conversation) -> Conversation:
    """The conversation with two-part questions only: consecutive pairs of its one-fact questions
    (one evidence turn each, in different sessions), asked as one query ("When did A ...? What
    did B ...?") whose evidence is both turns.

    Why: a question whose answer is spread over sessions ("which did I do first", "how many
    times") needs every part in the top k; LoCoMo's own multi-hop questions are few and mostly
    inferences. Pairs are taken in the data's order, so the set is the same on every run.
    """
    singles = [
        q for q in conv.questions if q.category in ONE_FACT_CATEGORIES and len(q.evidence) == 1
    ]
    questions = [
        Question(
            f"{first.text.strip()} {second.text.strip()}",
            "two-part",
            (first.evidence[0], second.evidence[0]),
        )
        for first, second in zip(singles[0::2], singles[1::2], strict=False)
        if session_of(first.evidence[0]) != session_of(second.evidence[0])
    ]
    return Conversation(
        sample_id=conv.sample_id,
        speakers=conv.speakers,
        turns=conv.turns,
        questions=questions,
        cleaning=conv.cleaning,
        questions_total=len(questions),
    )
