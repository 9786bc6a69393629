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
