"""A second hop: from the first results' own distinctive words to the memories they point to.

A question whose answer is spread over several memories finds one part by its words, and the
rest only through what that part says: for "which region do the nightly invoice exports end up
in", "the nightly export writes every invoice to the Zephyr bucket" points to "the Zephyr bucket
sits in the Frankfurt region". The best hits' rarest words that the query does not hold
(names, places, things: rare in general language and rare among the candidates) are bridges.
One more full-text search on the query's words and the bridges finds memories that share them;
each such memory gains a share (recall.second_hop) of the score of the hit whose bridges it
holds, in proportion to how much of that hit's words (query and bridges) it shares, and ends
below that hit, as a session neighbour does: a memory is lifted by the evidence it shares with a
hit, never ranked ahead of the hit.

Pure: texts, scores and word weights in, scores out (service.retrieval.recall runs the search).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memctl.core.evidence import STOP_WORDS, prior_idf, stem, text_stems, words

LIFTERS = 3  # the best hits whose bridges are followed
BRIDGES_PER_HIT = 4  # the rarest words taken from each
# A bridge is a word at least this rare in general language (a prior IDF: "friends" 3.7,
# "awesome" 4.8, "painting" 5.5, "Sweden" 6.0, "necklace" 7.4)...
BRIDGE_MIN_IDF = 5.0
# ...and held by at most this share of the first hop's candidates: a word most candidates share
# (the store's subject, a speaker's name) points to none of them in particular.
BRIDGE_MAX_SHARE = 0.2
CEILING = 0.999  # a lifted memory ends at most at this share of the hit that lifted it


@dataclass(frozen=True)
class Bridge:
    """One first-hop hit, its score, and the words it adds to the query (word -> weight)."""

    memory_id: str
    score: float
    words: dict[str, float]


def bridges(
    ranked: Sequence[tuple[str, float, str]],
    query_weights: Mapping[str, float],
    pool_texts: Sequence[str],
    zipf: Callable[[str], float | None],
) -> list[Bridge]:
    """The distinctive words of the best `LIFTERS` hits, given as (id, score, text) best first.

    `pool_texts` are the first hop's candidates: a word held by more than BRIDGE_MAX_SHARE of
    them (and by more than two) is no bridge. Hits with no such word are left out.
    """
    query_stems = {stem(term) for term in query_weights}
    pool = [text_stems(text) for text in pool_texts]
    held = Counter(word for stems in pool for word in stems)
    limit = max(BRIDGE_MAX_SHARE * len(pool), 2.0)  # Why 2: the hit and one it points to
    found: list[Bridge] = []
    for memory_id, score, text in ranked[:LIFTERS]:
        weights: dict[str, float] = {}
        for word in words(text):
            root = stem(word)
            if word in STOP_WORDS or root in query_stems or not word.isalpha() or len(word) < 3:
                continue
            if held[root] > limit or root in {stem(seen) for seen in weights}:
                continue
            weight = prior_idf(word, zipf)
            if weight >= BRIDGE_MIN_IDF:
                weights[word] = weight
        chosen = sorted(weights, key=lambda word: (-weights[word], word))[:BRIDGES_PER_HIT]
        if chosen:
            found.append(Bridge(memory_id, score, {word: weights[word] for word in chosen}))
    return found


def hop_query(query_weights: Mapping[str, float], found: Sequence[Bridge]) -> str:
    """The second search: the query's words and every bridge, once each."""
    terms = dict.fromkeys(query_weights)
    for bridge in found:
        terms.update(dict.fromkeys(bridge.words))
    return " ".join(terms)


def spread_along_bridges(
    scores: Mapping[str, float],
    found: Sequence[Bridge],
    texts: Mapping[str, str],
    query_weights: Mapping[str, float],
    share: float,
) -> dict[str, float]:
    """Scores after each hit passes a share of its score to the memories holding its bridges.

    A memory's pull toward a hit is the weighted share of that hit's words (the query's words
    it holds, and its bridges) that the memory holds too; it counts only if the memory holds
    at least one bridge. A memory lifted this way ends below the hit that lifted it (its own
    score, if higher, stands). `texts` hold every memory that may be lifted (id -> text).
    """
    spread = dict(scores)
    ceiling: dict[str, float] = {}
    stems_of = {memory_id: text_stems(text) for memory_id, text in texts.items()}
    for bridge in found:
        hit_stems = stems_of.get(bridge.memory_id)
        if hit_stems is None:
            continue
        query_held = {term: w for term, w in query_weights.items() if stem(term) in hit_stems}
        total = sum(query_held.values()) + sum(bridge.words.values())
        if total <= 0:
            continue
        for memory_id, stems in stems_of.items():
            if memory_id == bridge.memory_id:
                continue
            shared = sum(w for word, w in bridge.words.items() if stem(word) in stems)
            if shared <= 0:
                continue
            shared += sum(w for term, w in query_held.items() if stem(term) in stems)
            spread[memory_id] = spread.get(memory_id, 0.0) + share * bridge.score * shared / total
            ceiling[memory_id] = max(ceiling.get(memory_id, 0.0), bridge.score * CEILING)
    for memory_id, cap in ceiling.items():
        spread[memory_id] = max(scores.get(memory_id, 0.0), min(spread[memory_id], cap))
    return spread


def cover_order(
    ranked: Sequence[str],
    scores: Mapping[str, float],
    texts: Mapping[str, str],
    query_weights: Mapping[str, float],
    gain: float,
    depth: int,
) -> list[str]:
    """The first `depth` of `ranked` re-ordered so that hits holding different parts of the
    query come before hits that repeat what is already shown (a greedy set cover).

    The best hit stays first. Each next place goes to the memory whose score, times
    1 + gain x the weighted share of the query's words it holds that the memories above it do
    not, is highest; with every query word shown, that is plain score order again.
    """
    total = sum(query_weights.values())
    head, rest = list(ranked[:depth]), list(ranked[depth:])
    if gain <= 0 or total <= 0 or len(head) < 3:
        return list(ranked)
    held = {
        memory_id: {term for term in query_weights if stem(term) in text_stems(texts[memory_id])}
        for memory_id in head
    }
    chosen = [head.pop(0)]
    covered = set(held[chosen[0]])

    def value(memory_id: str) -> float:
        new = sum(query_weights[term] for term in held[memory_id] - covered)
        return scores[memory_id] * (1.0 + gain * new / total)

    while head:
        best = max(head, key=value)  # Why max over a list: ties keep the earlier (score) order
        head.remove(best)
        chosen.append(best)
        covered |= held[best]
    return chosen + rest
