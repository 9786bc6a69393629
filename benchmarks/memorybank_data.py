"""Read MemoryBank's dialogs, probing questions and our gold evidence (pure; no memctl imports).

The data (benchmarks/data/memorybank, MIT, see its LICENSE) holds, per language, 15 users' daily
chats with an AI companion (2023-04-27 .. 2023-05-06, a list of {query, response} exchanges a
day) and 5-7 probing questions per user. It carries no evidence: gold.json, written for memctl
by reading the dialogs, names for each question the exchanges that answer it.

An exchange is named `DATE#INDEX` (its day and its place in that day's list). A question's
evidence is a list of groups: every group must be found for recall_all, any member of a group
will do (the English dialogs repeat one day's exchanges, so either copy answers). `also` lists
exchanges that answer as well but are not needed; they count for recall_any only. A question
that asks about a whole day ("what did we talk about on April 29th?") has that day's exchanges
as one group: any of them counts, for recall_any and recall_all alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

DATA_DIR = Path(__file__).parent / "data" / "memorybank"
LANGUAGES = ("en", "cn")
# The question kinds of gold.json, in the order they are reported.
KINDS = ("dated", "about-me", "recommendation", "yes-no")
ANY_KS = (1, 5, 10)
ALL_KS = (5, 10)


@dataclass(frozen=True)
class Exchange:
    exchange_id: str  # "2023-04-30#3"
    day: str  # "2023-04-30"
    query: str
    response: str

    def memory_text(self) -> str:
        """The exchange as one memory: both sides, labelled as memctl labels transcript turns."""
        return f"User: {self.query.strip()}\nAssistant: {self.response.strip()}"


@dataclass(frozen=True)
class Question:
    index: int
    text: str
    kind: str
    groups: tuple[frozenset[str], ...]  # every group needed; any member of a group will do
    also: frozenset[str] = frozenset()  # further exchanges that answer (recall_any only)
    whole_day: str | None = None

    @property
    def relevant_any(self) -> frozenset[str]:
        return frozenset().union(*self.groups, self.also)


@dataclass
class User:
    lang: str
    name: str
    exchanges: list[Exchange]
    questions: list[Question]  # the answerable ones
    unanswerable: list[str]  # questions nothing in this language's dialogs answers

    @property
    def sample_id(self) -> str:
        return f"{self.lang}-{self.name.replace(' ', '_')}"

    @property
    def as_of(self) -> str:
        """The day after the user's last chat: when the questions are asked."""
        last = max(date.fromisoformat(e.day) for e in self.exchanges)
        return (last + timedelta(days=1)).isoformat()


def read_dialogs(path: Path) -> dict[str, list[Exchange]]:
    """user name -> exchanges in day order (upstream keys carry stray spaces: stripped)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    users: dict[str, list[Exchange]] = {}
    for key, record in raw.items():
        exchanges = []
        for day in sorted(record["history"]):
            for index, turn in enumerate(record["history"][day]):
                exchanges.append(Exchange(f"{day}#{index}", day, turn["query"], turn["response"]))
        users[key.strip()] = exchanges
    return users


def read_questions(path: Path) -> dict[str, list[str]]:
    """user name -> probing questions, in file order (one JSON object per line)."""
    questions: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for name, texts in json.loads(line).items():
                questions[name.strip()] = [str(text) for text in texts]
    return questions


def _question(index: int, text: str, gold: dict, exchanges: list[Exchange]) -> Question | None:
    known = {e.exchange_id for e in exchanges}
    whole_day = gold.get("whole_day")
    if whole_day:
        groups: tuple[frozenset[str], ...] = (
            frozenset(e.exchange_id for e in exchanges if e.day == whole_day),
        )
    else:
        groups = tuple(frozenset(group) for group in gold.get("evidence", []))
    also = frozenset(gold.get("also", []))
    for name in set().union(*groups, also):
        if name not in known:
            raise ValueError(f"gold names {name!r}, which is not an exchange of this user")
    if not groups or not all(groups):
        return None
    if gold["kind"] not in KINDS:
        raise ValueError(f"unknown question kind {gold['kind']!r}")
    return Question(index, text, gold["kind"], groups, also, whole_day)


def load_users(lang: str, data_dir: Path = DATA_DIR) -> list[User]:
    """Every user of `lang` with its exchanges and its gold-annotated questions, in file order."""
    folder = data_dir / lang
    dialogs = read_dialogs(folder / f"memory_bank_{lang}.json")
    texts = read_questions(folder / f"probing_questions_{lang}.jsonl")
    gold = json.loads((data_dir / "gold.json").read_text(encoding="utf-8"))[lang]
    users = []
    for name, exchanges in dialogs.items():
        annotated = gold.get(name, [])
        if len(annotated) != len(texts.get(name, [])):
            raise ValueError(f"gold.json has {len(annotated)} entries for {lang}/{name}")
        questions, unanswerable = [], []
        for index, (text, entry) in enumerate(zip(texts.get(name, []), annotated, strict=True)):
            question = _question(index, text, entry, exchanges)
            if question is None:
                unanswerable.append(text)
            else:
                questions.append(question)
        users.append(User(lang, name, exchanges, questions, unanswerable))
    return users


def score_question(ranked: list[str | None], question: Question) -> dict[str, float]:
    """recall_any@1/5/10 (any answering exchange in the top k) and recall_all@5/10 (every
    evidence group met in the top k)."""
    scores = {}
    for k in ANY_KS:
        top = set(ranked[:k])
        scores[f"recall_any@{k}"] = 1.0 if top & question.relevant_any else 0.0
    for k in ALL_KS:
        top = set(ranked[:k])
        scores[f"recall_all@{k}"] = 1.0 if all(top & group for group in question.groups) else 0.0
    return scores


def metric_names() -> list[str]:
    return [f"recall_any@{k}" for k in ANY_KS] + [f"recall_all@{k}" for k in ALL_KS]
