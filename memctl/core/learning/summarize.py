"""Deterministic extractive summaries: the offline fallback when no LLM is configured.

Sentences are scored by centrality (how much they share with the rest of the text), plus
bonuses for what summaries must not lose: numbers, names and decisions (and outcomes), with
penalties for small talk and questions. The best per character are kept,
in their original order, until the summary is about `ratio` of the input (the seeds ask for
20-30%). With `embed`, centrality is measured on sentence embeddings; without it, on TF-IDF
vectors of words (and character bigrams for Chinese).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memctl.core.language.sentences import join_sentences, split_sentences, strip_code_blocks

if TYPE_CHECKING:
    import numpy as np

# numpy is imported inside the functions that compute, so the word-level helpers stay light.
Embed = Callable[[list[str]], "np.ndarray"]

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "don",
        "done",
        "down",
        "during",
        "each",
        "else",
        "even",
        "ever",
        "few",
        "for",
        "from",
        "further",
        "get",
        "got",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "lets",
        "like",
        "ll",
        "made",
        "make",
        "many",
        "may",
        "me",
        "might",
        "more",
        "most",
        "much",
        "must",
        "my",
        "need",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "ok",
        "okay",
        "on",
        "once",
        "one",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "please",
        "re",
        "really",
        "right",
        "same",
        "see",
        "she",
        "should",
        "so",
        "some",
        "still",
        "such",
        "sure",
        "than",
        "thank",
        "thanks",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "thing",
        "things",
        "think",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "use",
        "used",
        "using",
        "ve",
        "very",
        "via",
        "was",
        "way",
        "we",
        "well",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "yeah",
        "yes",
        "yet",
        "you",
        "your",
        "yours",
        "user",
        "assistant",
        "add",
        "ask",
        "asking",
        "find",
        "going",
        "keep",
        "know",
        "look",
        "need",
        "say",
        "said",
        "start",
        "take",
        "tell",
        "try",
        "want",
    ]
)
# Characters that make a Chinese bigram a poor topic (particles, pronouns, copulas).
CJK_STOP_CHARS = frozenset(
    "的了是我你他她它们在和就不也有这那个吗呢吧啊把被对要会能说都还很与及或但而用给让"
)

DECISION_CUES = re.compile(
    r"\b(?:decided|decide|decision|agreed|agree|settled on|going with|go with|chose|chosen|"
    r"will|we'll|must|let's|approved)\b|决定|商定|约定|同意|确定|采用|选定|定下",
    re.IGNORECASE,
)
OUTCOME_CUES = re.compile(
    r"\b(?:fixed|resolved|solved|works now|working now|passed|passes|failed|fails|succeeded|"
    r"deployed|merged|released|shipped|completed|finished|turned out|root cause|result(?:ed|s)?|"
    r"outcome)\b|修复|解决|通过|失败|成功|完成|上线|发布|结果|发现|原因是",
    re.IGNORECASE,
)
# Stricter than DECISION_CUES: what find_decisions reports as a decision on its own.
STATED_DECISION = re.compile(
    r"\b(?:decided|decision|agreed (?:to|that|on)|we agree|settled on|going with|go with|chose|"
    r"chosen|we will|we'll|let's (?:use|go|keep|switch|stick|move|do|adopt)|approved)\b|"
    r"决定|商定|约定|同意|确定|采用|选定|就这么办",
    re.IGNORECASE,
)
_NOT_DECISION = re.compile(r"\b(?:let's see|let me|will you|would you|you will)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'.+#-]*[A-Za-z0-9+#]|[A-Za-z]|\d+(?:[.:]\d+)*")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_SMALL_TALK = re.compile(
    r"^(?:ok(?:ay)?|thanks?(?: you)?|thx|great|cool|nice|sure|yes|no|yep|got it|sounds good|"
    r"perfect|好的?|谢谢|嗯|行|可以|收到)[.!。！\s]*$",
    re.IGNORECASE,
)

NUMBER_BONUS = 0.3
NAME_BONUS = 0.15
DECISION_BONUS = 0.3
OUTCOME_BONUS = 0.15
REDUNDANT_SIMILARITY = 0.8
LENGTH_EXPONENT = 0.3


def summarize(
    sentences_or_text: str | Sequence[str],
    *,
    ratio: float = 0.25,
    embed: Embed | None = None,
    max_sentences: int | None = None,
) -> str:
    """An extractive summary of about `ratio` of the input's characters."""
    import numpy as np

    sentences = _as_sentences(sentences_or_text)
    if not sentences:
        return ""
    total = sum(len(s) for s in sentences)
    target = ratio * total
    ceiling = (ratio + 0.05) * total
    vectors = _embedding_vectors(sentences, embed) if embed else _tfidf_vectors(sentences)
    similarity = vectors @ vectors.T
    scores = _centrality(similarity) + np.array([_bonus(s) for s in sentences])
    # Under a character budget, a short sentence dense with facts competes with a long one.
    lengths = np.array([max(len(s), 1) for s in sentences], dtype=float)
    density = np.where(scores > 0, scores * (lengths.mean() / lengths) ** LENGTH_EXPONENT, scores)
    order = sorted(range(len(sentences)), key=lambda i: (-round(float(density[i]), 9), i))
    chosen: list[int] = []
    length = 0
    for i in order:
        if max_sentences is not None and len(chosen) >= max_sentences:
            break
        if length >= target:
            break
        if chosen and (length + len(sentences[i]) > ceiling or scores[i] < 0):
            continue  # over budget, or small talk / a bare question used as filler
        if any(similarity[i, j] >= REDUNDANT_SIMILARITY for j in chosen):
            continue
        chosen.append(i)
        length += len(sentences[i])
    return join_sentences([sentences[i] for i in sorted(chosen)])


def key_topics(text: str, n: int = 5) -> list[str]:
    """The most frequent content words, names and Chinese bigrams mentioned at least twice.

    A capitalized term (a name, an acronym) counts double, so a name said once qualifies.
    """
    text = strip_code_blocks(text)
    counts: Counter[str] = Counter()
    surface: dict[str, Counter[str]] = {}
    first_seen: dict[str, int] = {}
    position = 0
    for sentence in split_sentences(text):
        for index, word in enumerate(_WORD.findall(sentence)):
            key = word.lower().strip(".'")
            if len(key) < 3 or key in STOPWORDS or "'" in key or key.replace(".", "").isdigit():
                continue
            weight = 2 if _is_name(word, index) else 1
            counts[key] += weight
            surface.setdefault(key, Counter())[word.strip(".'")] += 1
            first_seen.setdefault(key, position)
            position += 1
        for bigram in _cjk_bigrams(sentence):
            counts[bigram] += 1
            surface.setdefault(bigram, Counter())[bigram] += 1
            first_seen.setdefault(bigram, position)
            position += 1
    ranked = sorted(
        (key for key, count in counts.items() if count >= 2 or len(counts) <= n),
        key=lambda k: (-counts[k], first_seen[k]),
    )
    return [_preferred_surface(surface[key]) for key in ranked[:n]]


def find_decisions(text: str) -> list[str]:
    """Sentences that state a decision or commitment."""
    return [
        s
        for s in _unique(split_sentences(strip_code_blocks(text)))
        if STATED_DECISION.search(s)
        and not _NOT_DECISION.search(s)
        and not _is_question(s)
        and len(_tokens(s)) >= 2
    ]


def find_outcomes(text: str) -> list[str]:
    """Sentences that report how something turned out."""
    return [
        s
        for s in _unique(split_sentences(strip_code_blocks(text)))
        if OUTCOME_CUES.search(s) and not _is_question(s)
    ]


def _as_sentences(value: str | Sequence[str]) -> list[str]:
    if isinstance(value, str):
        return split_sentences(strip_code_blocks(value))
    return [s.strip() for s in value if s and s.strip()]


def _tokens(sentence: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(sentence)]
    tokens = [w for w in words if w not in STOPWORDS and len(w) > 1]
    tokens.extend(_cjk_bigrams(sentence))
    return tokens


def _cjk_bigrams(sentence: str) -> list[str]:
    grams = []
    for run in _CJK_RUN.findall(sentence):
        for i in range(len(run) - 1):
            gram = run[i : i + 2]
            if not (set(gram) & CJK_STOP_CHARS):
                grams.append(gram)
    return grams


def _tfidf_vectors(sentences: list[str]) -> np.ndarray:
    import numpy as np

    token_lists = [_tokens(s) for s in sentences]
    vocabulary = sorted({t for tokens in token_lists for t in tokens})
    if not vocabulary:
        return np.zeros((len(sentences), 1))
    column = {t: i for i, t in enumerate(vocabulary)}
    document_frequency = Counter(t for tokens in token_lists for t in set(tokens))
    n = len(sentences)
    matrix = np.zeros((n, len(vocabulary)))
    for row, tokens in enumerate(token_lists):
        for token, count in Counter(tokens).items():
            idf = math.log((1 + n) / (1 + document_frequency[token])) + 1
            matrix[row, column[token]] = (1 + math.log(count)) * idf
    return _normalize_rows(matrix)


def _embedding_vectors(sentences: list[str], embed: Embed) -> np.ndarray:
    import numpy as np

    matrix = np.asarray(embed(sentences), dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != len(sentences):
        raise ValueError("embed must return one vector per sentence")
    return _normalize_rows(matrix)


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _centrality(similarity: np.ndarray) -> np.ndarray:
    """Half cosine to the centroid, half mean similarity to the other sentences; scaled 0..1."""
    import numpy as np

    n = similarity.shape[0]
    if n == 1:
        return np.ones(1)
    # For unit rows, cosine to the centroid is the row sum over the centroid's norm.
    row_sums = similarity.sum(axis=1)
    centroid_norm = math.sqrt(max(float(similarity.sum()), 1e-12))
    to_centroid = row_sums / centroid_norm
    mean_to_others = (row_sums - np.diag(similarity)) / (n - 1)
    raw = 0.5 * to_centroid + 0.5 * mean_to_others
    low, high = float(raw.min()), float(raw.max())
    if high - low < 1e-12:
        return np.zeros(n)
    return (raw - low) / (high - low)


def _bonus(sentence: str) -> float:
    bonus = 0.0
    if _NUMBER.search(sentence):
        bonus += NUMBER_BONUS
    words = _WORD.findall(sentence)
    if any(_is_name(word, index) for index, word in enumerate(words)):
        bonus += NAME_BONUS
    if DECISION_CUES.search(sentence) and not _NOT_DECISION.search(sentence):
        bonus += DECISION_BONUS
    if OUTCOME_CUES.search(sentence):
        bonus += OUTCOME_BONUS
    if _SMALL_TALK.match(sentence) or len(_tokens(sentence)) < 2:
        bonus -= 0.5
    if _is_question(sentence):
        bonus -= 0.1
    letters = sum(ch.isalpha() for ch in sentence)
    if letters < 0.5 * len(sentence):  # paths, logs, numbers-only lines
        bonus -= 0.2
    return bonus


def _is_name(word: str, index: int) -> bool:
    """A proper name or identifier: capitalized mid-sentence, an acronym, or CamelCase."""
    if len(word) < 2 or not word[0].isalpha():
        return False
    if word.isupper() and word.isalpha():
        return word not in ("I", "OK")
    if re.match(r"[A-Z][a-z]+[A-Z]", word):
        return True
    return index > 0 and word[0].isupper() and word.lower() not in STOPWORDS


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith(("?", "？"))


def _preferred_surface(forms: Counter[str]) -> str:
    return sorted(forms.items(), key=lambda item: (-item[1], item[0]))[0][0]


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
