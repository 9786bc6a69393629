"""Subject keys: what a statement is about, so a new value on the same subject is recognised.

A key is `kind:subject` (kind is preference, rule, profile, decision, fact, procedure, lesson).
The subject is found by the first of these that applies:

1. A facet: a value from a small table of mutually exclusive options (tabs/spaces ->
   indentation, npm/pnpm/yarn -> package-manager, dark/light mode -> theme, ...).
2. A qualifier: "tabs *for indentation*", "Postgres *as the event store*" -> "event-store".
3. For a copular clause ("the staging DB is on port 5433"), the words before the verb.
4. Otherwise the head of the phrase: its last content word (English noun phrases end in their
   head: "short commit messages" -> "message"), or all content words of a verb phrase.

So "I prefer tabs" and "I prefer spaces for indentation" share "preference:indentation", and
"remember the staging DB is on port 5433" vs "... on port 6543" share "fact:staging-db". The
heuristic can over-match ("short functions" vs "pure functions"); downstream, a replaced value
is kept in the memory's history, so an over-match never loses a statement.
"""

from __future__ import annotations

import re

FACETS = {
    "indentation": ("tabs", "spaces", "indent", "indentation", "制表符", "缩进"),
    "quotes": ("single quotes", "double quotes", "单引号", "双引号"),
    "theme": (
        "dark mode",
        "light mode",
        "dark theme",
        "light theme",
        "深色",
        "浅色",
        "暗色",
        "亮色",
    ),
    "package-manager": ("npm", "pnpm", "yarn", "pip", "poetry", "uv", "pipenv", "conda"),
    "editor": (
        "vim",
        "neovim",
        "nvim",
        "emacs",
        "vscode",
        "vs code",
        "visual studio code",
        "nano",
        "sublime",
        "intellij",
        "pycharm",
    ),
    "shell": ("bash", "zsh", "powershell"),
    "line-endings": ("crlf", "lf line endings"),
}

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "my",
        "our",
        "your",
        "their",
        "his",
        "her",
        "its",
        "some",
        "any",
        "all",
        "each",
        "every",
        "very",
        "really",
        "just",
        "also",
        "only",
        "more",
        "most",
        "much",
        "many",
        "few",
        "other",
        "such",
        "own",
        "same",
        "so",
        "too",
        "quite",
        "rather",
        "always",
        "never",
        "usually",
        "often",
        "please",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "into",
        "about",
        "and",
        "or",
        "but",
        "if",
        "then",
        "than",
        "when",
        "while",
        "because",
        "since",
        "it",
        "them",
        "they",
        "we",
        "you",
        "i",
        "me",
        "he",
        "she",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "will",
        "would",
        "can",
        "could",
        "should",
        "must",
        "may",
        "might",
        "not",
        "no",
        "don't",
        "doesn't",
        "user's",
        "user",
    ]
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_+#./-]*[a-z0-9+#]|[a-z0-9]|[\u3400-\u9fff]+")
_QUALIFIER = re.compile(r"\b(?:for|as)\s+(.+)$", re.IGNORECASE)
_CORE_END = re.compile(
    r"[;:()]|,\s*(?:and|but|so|because|since|which|though|although)\s|"
    r"\s(?:over|rather than|instead of|than|because|since|when|while|if|unless|before|after|but|"
    r"so that|so|which|where|though|although|whenever|wherever|everywhere|anywhere|except|"
    r"and then|without|with|in|on|at|from|into|using|via|until)\s",
    re.IGNORECASE,
)
_COPULA = re.compile(
    r"\s(?:is|are|was|were|has|have|will be|use|uses|run|runs|live|lives|need|needs|lies)\s",
    re.IGNORECASE,
)
_CJK_CORE_END = re.compile(r"[，,；;：:（(]|因为|但是|不过|而且|然后|如果|除非|而不是")
_CJK_EDGE = "的了是用在把将给对和与就都也还很"


def subject_key(kind: str, subject: str) -> str:
    return f"{kind}:{subject or 'general'}"


def object_subject(phrase: str) -> str:
    """Subject of a noun or verb phrase: facet, then qualifier, then head word."""
    if _is_cjk(phrase):
        return cjk_subject(phrase)
    facet = find_facet(phrase)
    if facet:
        return facet
    core = clause_core(phrase)
    qualifier = _QUALIFIER.search(core)
    if qualifier and normalize(qualifier.group(1)):
        return normalize(qualifier.group(1))
    words = content_words(core)
    if not words:
        return ""
    if core.lower().startswith("to ") or core.lower().endswith("ing"):
        return "-".join(words[:4])
    return words[-1]


def verb_subject(phrase: str) -> str:
    """Subject of an instruction ("use pnpm", "run the tests first"): its verb and object."""
    if _is_cjk(phrase):
        return cjk_subject(phrase)
    words = phrase.strip().split(None, 1)
    if not words:
        return ""
    verb = words[0].lower().strip(".,!")
    rest = object_subject(words[1]) if len(words) > 1 else ""
    return f"{verb}-{rest}" if rest else verb


def clause_subject(clause: str) -> str:
    """Subject of a whole clause: the words before its verb, else all its content words."""
    if _is_cjk(clause):
        before, _, after = clause.partition("是")
        return cjk_subject(before if after and before else clause)
    facet = find_facet(clause)
    copula = _COPULA.search(f" {clause} ")
    if copula:
        before = normalize(f" {clause} "[: copula.start()])
        if before:
            return before
    return facet or "-".join(content_words(clause_core(clause))[:6])


def clause_core(phrase: str) -> str:
    """The phrase up to its first clause boundary (comma, 'over', 'because', ...)."""
    match = _CORE_END.search(phrase)
    return (phrase[: match.start()] if match else phrase).strip()


def find_facet(phrase: str) -> str:
    lower = f" {phrase.lower()} "
    for facet, values in FACETS.items():
        for value in values:
            if _is_cjk(value):
                if value in lower:
                    return facet
            elif re.search(rf"(?<![a-z0-9]){re.escape(value)}(?![a-z0-9])", lower):
                return facet
    return ""


def normalize(text: str, limit: int = 4) -> str:
    return "-".join(content_words(text)[:limit])


def content_words(text: str) -> list[str]:
    words = []
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        words.append(_singular(word))
    return words


def cjk_subject(phrase: str) -> str:
    """Chinese has no spaces: facet, else the ASCII terms, else the tail of the last phrase."""
    facet = find_facet(phrase)
    if facet:
        return facet
    core = _CJK_CORE_END.split(phrase, 1)[0]
    ascii_words = [w for w in content_words(core) if not _is_cjk(w)]
    if ascii_words:
        return "-".join(ascii_words[:4])
    runs = re.findall(r"[\u3400-\u9fff]+", core)
    if not runs:
        return ""
    run = runs[-1].strip(_CJK_EDGE) or runs[-1]
    parts = [part for part in run.split("的") if part]
    if len(parts) >= 2:  # "测试数据库的端口": the head and what it belongs to
        return f"{parts[-2][-4:]}的{parts[-1][-4:]}"
    return run[-4:]


def _singular(word: str) -> str:
    if not word.isalpha():  # identifiers such as node_modules or config.yaml stay as written
        return word
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "os")):
        return word[:-1]
    return word


def _is_cjk(text: str) -> bool:
    return bool(re.search(r"[\u3400-\u9fff]", text))
