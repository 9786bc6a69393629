"""How much of a query a memory answers by its words: query terms, their weights, coverage.

A word's weight is a prior inverse document frequency taken from how common the word is in
general language (a word-frequency list), not from the store: over ten memories BM25's own IDF
cannot tell "lives" from "invoices", a frequency list can. The weight is the IDF a word would
have in a collection of ~100-word documents: -ln P(a document contains it), with
P = 1 - exp(-100 x its frequency). "the" weighs ~0, "first" ~2.3, "invoices" ~7.6.

Pure: the frequency list is passed in (see integrations.word_frequency).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache

from memctl.core.language.text_tokens import CHINESE_STOP_WORDS, CJK_RUN, bigrams

DOC_TOKENS = 100  # length of the imagined document the prior IDF is computed for
ZIPF_FLOOR = 3.0  # the shipped lists hold words of Zipf >= 3 (one per million words)
ZIPF_UNKNOWN = 2.5  # a word not in the list is rarer than every word in it
# A CJK character pair missing from the list is mostly two words' edges ("了什" of 了/什么),
# not a rare term: it weighs like a fairly common word.
ZIPF_UNKNOWN_CJK_PAIR = 4.5
CJK = CJK_RUN  # Han, kana and Hangul, as the full-text index cuts them
_TOKEN = re.compile(f"{CJK_RUN.pattern}|[^\\W_]+(?:['’][^\\W_]+)*", re.UNICODE)
# Words that carry no topic in a question, however rare a frequency list says they are.
STOP_WORDS = frozenset(
    """
    a an the this that these those there here it its it's i me my mine we us our ours you your
    yours he him his she her hers they them their theirs one ones is are was were be been being
    am do does did done doing have has had having will would shall should can could may might
    must ought of in on at by for with from to into onto about over under up down out off as
    than then so too very just also only not no nor or and but if else when where what which
    who whom whose why how whether while because since until after before during any some all
    each every both either neither few more most much many other such own same again ever
    please tell know let get got make made thing things something anything way want need like
    s t d ll re ve m don't doesn't didn't isn't aren't wasn't weren't won't can't i'm we're
    you're they're that's what's there's how's i've we've
    """.split()
)

Zipf = Callable[[str], float | None]


def words(text: str) -> list[str]:
    """Lower-cased words; a run of CJK characters becomes its overlapping character pairs."""
    found: list[str] = []
    for token in _TOKEN.findall(text.lower()):
        if CJK.match(token):
            found.extend(pair for pair in bigrams(token) if pair not in CHINESE_STOP_WORDS)
        else:
            found.append(token.replace("’", "'"))
    return found


@lru_cache(maxsize=1 << 16)  # Why: recall stems every candidate's text, mostly the same words
def stem(word: str) -> str:
    """A light English stem, enough to match invoice/invoices, live/lives/lived/living."""
    if CJK.match(word) or not word.isalpha() or len(word) <= 3:
        return word.removesuffix("'s")
    word = word.removesuffix("'s")
    for suffix, replacement, least in (
        ("ies", "y", 4),
        ("ied", "y", 4),
        ("sses", "ss", 4),
        ("ing", "", 5),
        ("ed", "", 4),
        ("es", "", 4),
        ("s", "", 3),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= least - len(replacement) - 1:
            if suffix == "es" and not word[:-2].endswith(("s", "x", "z", "ch", "sh", "o")):
                continue
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + replacement
            break
    return word.removesuffix("e") if len(word) > 3 else word


def query_terms(query: str) -> list[str]:
    """The query's topic words in order, without repeats or stop words."""
    seen: dict[str, None] = {}
    for word in words(query):
        if word not in STOP_WORDS and word not in seen:
            seen[word] = None
    return list(seen)


def prior_idf(word: str, zipf: Zipf) -> float:
    """The word's IDF in an imagined collection of ~100-word documents, from its Zipf value."""
    value = zipf(word)
    if value is None and word != stem(word):
        value = zipf(stem(word))
    if value is None:
        value = ZIPF_UNKNOWN_CJK_PAIR if CJK.match(word) else ZIPF_UNKNOWN
    rate = DOC_TOKENS * 10.0 ** (value - 9.0)
    return -math.log(-math.expm1(-rate)) if rate > 1e-12 else 27.6


def term_weights(terms: Iterable[str], zipf: Zipf) -> dict[str, float]:
    return {term: prior_idf(term, zipf) for term in terms}


# Why cached, and this many: fusion's prior and ties, the coverage veto and each
# hit's relevance read the same candidates' words, and a server sees the same rows again and
# again (each text's stems take ~40 us; 16k texts' counts hold ~25 MB).
TEXT_CACHE_SIZE = 1 << 14


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def stem_counts(text: str) -> dict[str, int]:
    """How often each stem occurs in `text`, in order of first occurrence (do not change it:
    it is cached)."""
    counts: dict[str, int] = {}
    for word in words(text):
        root = stem(word)
        counts[root] = counts.get(root, 0) + 1
    return counts


def text_stems(text: str) -> AbstractSet[str]:
    """The stems `text` holds, as a set."""
    return stem_counts(text).keys()


def matched_terms(weights: Mapping[str, float], stems: AbstractSet[str]) -> list[str]:
    return [term for term in weights if stem(term) in stems]


def coverage(
    weights: Mapping[str, float], stems: AbstractSet[str], heaviest: int | None = None
) -> float:
    """Share of the query's weight whose words the text contains (0 when nothing matches).

    With `heaviest`, the share of the weight of the query's `heaviest` heaviest words (capped
    at 1): how much a text holds of what a long prompt can ask of one memory (see query_span)."""
    total = query_span(weights, heaviest)
    if total <= 0:
        return 0.0
    return min(sum(weights[term] for term in matched_terms(weights, stems)) / total, 1.0)


def query_span(weights: Mapping[str, float], heaviest: int | None = None) -> float:
    """The weight one memory can hold of the query: all of it, or its `heaviest` heaviest
    words'. Why a cap: a task prompt of twenty words asks several things, each answered by
    another note; the note that holds its three rarest words matches as well as one holding a
    five-word question whole, yet holds a small share of the prompt's weight."""
    if heaviest is None or heaviest >= len(weights):
        return sum(weights.values())
    return sum(sorted(weights.values(), reverse=True)[: max(heaviest, 0)])


def coverage_with_time(cover: float) -> float:
    """`cover` of a memory dated when the query says: its date answers half the query.

    A query that names a time ("on May 2nd", 上周) asks two things, when and what; its time
    phrase is left out of the words (`cover` is their share), and the date answers it. Half,
    not one word's share: "what did we talk about on April 29th" is all about the day, and its
    other words are the ones every conversation holds.
    """
    return (1.0 + cover) / 2


def part_coverage(
    weights: Mapping[str, float], stems: AbstractSet[str], shown: AbstractSet[str]
) -> float:
    """The words a hit has as evidence when hits already shown hold other words of the query.

    A question in several parts ("when did I move, and what did I name the puppy") is answered
    by several memories, each holding its part's words: alone, each holds too little of the
    query to pass the floor. A memory that adds more than a crumb (LEXICAL_NONE) of the query's
    weight to what the shown hits (`shown`: their matched query words) hold counts as holding
    their words and its own; one that adds less counts as holding only its own (coverage()).
    """
    total = sum(weights.values())
    own = coverage(weights, stems)
    if total <= 0 or not shown:
        return own
    held = set(matched_terms(weights, stems))
    added = sum(weights[term] for term in held - shown) / total
    if added <= LEXICAL_NONE:
        return own
    return sum(weights[term] for term in held | (shown & set(weights))) / total


def weighted_match(weights: Mapping[str, float], text: str, average_length: float) -> float:
    """BM25 with the prior weights as IDF: saturating term counts, longer texts discounted."""
    counts = stem_counts(text)
    length = max(sum(counts.values()), 1)
    norm = 1.2 * (0.25 + 0.75 * length / max(average_length, 1.0))
    score = 0.0
    for term, weight in weights.items():
        count = counts.get(stem(term), 0)
        if count:
            score += weight * count * 2.2 / (count + norm)
    return score


# --- relevance: one number per hit that means the same for every query and store ----------


@dataclass(frozen=True)
class CosineScale:
    """Where an embedding model's cosines stop meaning "unrelated" and start meaning "about".

    Every model has its own scale: all-MiniLM puts the nearest unrelated memory of a query
    near 0.2-0.27 and answers near 0.5, the multilingual USE unrelated ones near 0.15-0.3 and
    answers near 0.3, e5 everything between 0.78 and 0.92. Chosen per model by
    benchmarks/relevance_calibration.py on the dev halves of two sets (small store,
    multilingual): `none` is the lowest cosine at which at most 5% of no-answer queries return
    anything (at recall.min_relevance 0.25), plus a margin of 0.2 standard deviations of the
    model's unrelated cosines; checked on the held-out halves and the example store.
    """

    none: float  # a cosine at or below this is no evidence of relevance...
    full: float  # ...and at or above this, full evidence
    # How much lower both lie between a text in a CJK script and one in the Latin script (a
    # cross-lingual model's unrelated pairs across scripts sit closer to 0: USE's 99th
    # percentile is 0.25 across, 0.30 within a script, on the multilingual set).
    cross_script: float = 0.0


COSINE_SCALES = {
    "all-MiniLM-L6-v2-int8": CosineScale(0.22, 0.50),
    "use-multilingual-v3": CosineScale(0.21, 0.46, cross_script=0.05),
    # e5's vectors less their common direction (integrations.multilingual.E5Embedder).
    "multilingual-e5-small-q4": CosineScale(0.38, 0.55),
    # The ensemble's cosine is EVIDENCE_COSINE (0.0368) per standard deviation above the null
    # of the model that reads the pair (integrations.multilingual): none ~2.1 sd, full ~4.1 sd.
    "use-e5-ensemble": CosineScale(0.077, 0.15),
}
DEFAULT_SCALE = COSINE_SCALES["all-MiniLM-L6-v2-int8"]
LEXICAL_NONE = 0.25  # a weighted word coverage at or below this is no evidence...
LEXICAL_FULL = 1.00  # ...and every query word present is full evidence


def cosine_scale(model_id: str | None) -> CosineScale:
    """The calibrated scale of `model_id`; a model not calibrated uses the bundled one's."""
    return COSINE_SCALES.get(model_id or "", DEFAULT_SCALE)


def _ramp(value: float, none: float, full: float) -> float:
    return min(max((value - none) / (full - none), 0.0), 1.0)


# How a cosine reads between "no evidence" and "certain": a concave curve over a range STRETCH
# times the calibrated one, bent so that it crosses the shipped floor (recall.min_relevance
# 0.25) at the same cosine as the straight ramp did. Why: on the straight ramp every cosine
# from the model's `full` up read 1.00, so a loose match of a short query (a profile memory
# for "how do we deploy", cosine ~0.5 with MiniLM) and its clear answer (~0.7) looked alike.
STRETCH = 1.9
_FLOOR_POINT = 0.25
BEND = math.log(_FLOOR_POINT) / math.log(_FLOOR_POINT / STRETCH)
# The query words a memory holds are strong evidence only when they weigh something: one word
# of prior IDF HELD_WORDS (a fairly rare word, e.g. "deploy") gives 1 - 1/e of the words'
# share; two such words 86%. Why: a one-word query ("how do we deploy") is wholly "held" by
# every memory that says "deploy", which is no sign that it answers the question.
HELD_WORDS = 8.0


def meaning_evidence(cosine: float, scale: CosineScale, shift: float = 0.0) -> float:
    """The evidence of a cosine on its model's scale, in [0, 1] (see STRETCH)."""
    none = scale.none - shift
    reach = (scale.full - scale.none) * STRETCH
    return _ramp(cosine, none, none + reach) ** BEND


def word_evidence(cover: float, held: float | None = None) -> float:
    """The evidence of holding `cover` (a weighted share) of the query's words, `held` their
    summed weight (None: as if plenty)."""
    strength = 1.0 if held is None else -math.expm1(-held / HELD_WORDS)
    return _ramp(cover, LEXICAL_NONE, LEXICAL_FULL) * strength


def relevance(
    cosine: float | None,
    cover: float,
    identifier: bool = False,
    scale: CosineScale = DEFAULT_SCALE,
    cross_script: bool = False,
    held: float | None = None,
) -> float:
    """How sure we are that a memory is about the query, in [0, 1], from its own evidence only.

    Meaning (the cosine of its vector to the query's, on its model's `scale`) and words (the
    weighted share of the query's words it contains, `held` their summed weight) each give a
    degree of evidence on a fixed scale, and either may suffice: relevance = 1 - (1 - meaning)
    (1 - words). A verbatim identifier of the query is certain. Unlike the fused score, the
    scale does not depend on the other candidates, so one floor (recall.min_relevance) works
    for every query and model. `cross_script`: the query and the memory are written in
    different scripts (CJK, Latin).
    """
    if identifier:
        return 1.0
    shift = scale.cross_script if cross_script else 0.0
    meaning = 0.0 if cosine is None else meaning_evidence(cosine, scale, shift)
    lexical = word_evidence(cover, held)
    return 1.0 - (1.0 - meaning) * (1.0 - lexical)
