"""Knowledge updates between separate memories: does a new statement replace an older one?

"Our CI runs on GitHub Actions", later "Our CI now runs on GitLab CI, we moved off GitHub
Actions": the same subject (CI) with another value (GitLab CI). The write path keeps both files,
links them (`relations: supersedes` on the new one, `superseded_by` on the old) and recall shows
the current one. A new statement supersedes a stored one when

- they are about the same thing: close in meaning (cosine; for Chinese, which the bundled model
  reads poorly, also the share of character pairs they have in common), sharing subject words,
  and neither leads with a qualifier the other lacks ("staging database" vs "production
  database" are two subjects);
- the new one gives a value the old one lacks (a name, number, code span or option), contradicts
  it, or says it changed "from X to Y" / "instead of X";
- and, unless they are nearly the same sentence, it says that something changed ("now",
  "moved to", "no longer", "switched", 改为, 不再 ...).

Pure; the thresholds come from config (write.supersede_similarity, supersede_cue_similarity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memctl.core.learning.facts import CHANGE_CUE, distinct_facts
from memctl.core.learning.revisions import facet_values, values_conflict
from memctl.core.learning.subjects import STOPWORDS, content_words

SUPERSEDING_TYPES = ("semantic", "procedural", "preference", "profile", "knowledge")
_EXPLICIT_CHANGE = re.compile(
    r"\bfrom \S+(?: \S+)? to \S+|\binstead of\b|\brather than\b|\breplaced by\b|\bno longer\b|"
    r"\bmoved off\b|改为|改成|改用|换成|不再",
    re.IGNORECASE,
)
# Names and values: capitalised words, CamelCase, versions and numbers, code spans.
_VALUE = re.compile(
    r"`[^`]+`|\b\d+(?:[.:]\d+)*\b|\b[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*\b|\b[a-z]+[A-Z]\w*\b"
)
_CJK = re.compile(r"[\u3400-\u9fff]+")
LEAD_WORDS = 3  # how many leading subject words name the subject's qualifiers


@dataclass(frozen=True)
class SupersedeLimits:
    similarity: float = 0.8  # this close in meaning: the same subject, change cue or not
    cue_similarity: float = 0.55  # this close, with a change cue


def value_tokens(text: str) -> set[str]:
    """Names, numbers, code and known options in a statement (lower-cased)."""
    found = {match.group(0).strip("`").lower() for match in _VALUE.finditer(text)}
    found = {token for token in found if token not in STOPWORDS}
    return found | set(facet_values(text))


def _subject_terms(text: str) -> list[str]:
    """Content words that are neither values nor change cues, in order; Chinese as pairs."""
    values = {word for token in value_tokens(text) for word in content_words(token)}
    terms = []
    for word in content_words(_CJK.sub(" ", text)):
        if word not in values and not CHANGE_CUE.fullmatch(word) and word not in terms:
            terms.append(word)
    for run in _CJK.findall(text):
        terms.extend(pair for pair in _pairs(run) if pair not in terms)  # a lone character too
    return terms


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(max(len(run) - 1, 1))]


def character_overlap(a: str, b: str) -> float:
    """Share of the shorter text's CJK character pairs found in the other (0 without CJK)."""
    pairs_a = {p for run in _CJK.findall(a) for p in _pairs(run)}
    pairs_b = {p for run in _CJK.findall(b) for p in _pairs(run)}
    if not pairs_a or not pairs_b:
        return 0.0
    return len(pairs_a & pairs_b) / min(len(pairs_a), len(pairs_b))


def differs_in_value(old: str, new: str) -> bool:
    if values_conflict(old, new) or _EXPLICIT_CHANGE.search(new):
        return True
    return bool(value_tokens(new) - value_tokens(old))


def subject_clash(old: str, new: str) -> bool:
    """Each leads with a subject word the other lacks: two subjects, not one that changed.
    (Words only: Chinese character pairs do not say where a subject ends.)"""
    old_terms = [t for t in _subject_terms(old) if not _CJK.match(t)]
    new_terms = [t for t in _subject_terms(new) if not _CJK.match(t)]
    return _lacks(old_terms[:LEAD_WORDS], new_terms) and _lacks(new_terms[:LEAD_WORDS], old_terms)


def _lacks(lead: list[str], other: list[str]) -> bool:
    """Some leading word has no kin in `other` (kin: the same first five letters, so
    "deployed" and "deployment" are one word)."""
    return any(not any(_kin(word, candidate) for candidate in other) for word in lead)


def _kin(a: str, b: str) -> bool:
    size = min(5, len(a), len(b))
    return a == b or (size >= 4 and a[:size] == b[:size])


def _mentions(text: str) -> set[str]:
    return set(_subject_terms(text)) | value_tokens(text)


def supersedes(old: str, new: str, similarity: float, limits: SupersedeLimits) -> bool:
    """Does statement `new` replace statement `old` (cosine `similarity` between them)?"""
    if distinct_facts(old, new):
        return False  # Why: another ticket, region or team: a second fact, not a new value
    similarity = max(similarity, character_overlap(old, new))
    if similarity < limits.cue_similarity or not differs_in_value(old, new):
        return False
    if not _mentions(old) & _mentions(new) or subject_clash(old, new):
        return False
    cue = bool(CHANGE_CUE.search(new))
    return cue or (similarity >= limits.similarity and values_conflict(old, new))
