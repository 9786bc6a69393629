"""Turn a first-person clause into a standalone third-person sentence, without adding content.

"I always use vim" -> "The user always uses vim."; "my laptop runs Arch" -> "The user's laptop
runs Arch."; "我喜欢深色主题" -> "用户喜欢深色主题。". The first first-person reference becomes
"the user"; later ones become they/them/their, which then have an antecedent.
"""

from __future__ import annotations

import re

from memctl.core.language.sentences import has_cjk

ADVERBS = {
    "always",
    "never",
    "usually",
    "often",
    "sometimes",
    "really",
    "also",
    "just",
    "only",
    "still",
    "generally",
    "mostly",
    "rarely",
    "strongly",
    "much",
    "definitely",
    "personally",
    "actually",
    "typically",
    "normally",
    "currently",
    "now",
    "mainly",
    "seldom",
}
MODALS = {
    "can",
    "could",
    "will",
    "would",
    "should",
    "must",
    "might",
    "may",
    "shall",
    "can't",
    "cannot",
    "won't",
    "wouldn't",
    "shouldn't",
    "couldn't",
    "didn't",
    "mustn't",
    "had",
    "did",
    "was",
    "wasn't",
}
IRREGULAR = {
    "am": "is",
    "'m": "is",
    "have": "has",
    "'ve": "has",
    "do": "does",
    "don't": "doesn't",
    "'d": "would",
    "'ll": "will",
    "haven't": "hasn't",
    "go": "goes",
}

# Later first-person words, once "the user" has been named.
_LATER = {
    "i": "they",
    "me": "them",
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
    "i'm": "they're",
    "i've": "they've",
    "i'd": "they'd",
    "i'll": "they'll",
}
# A first-person word when nothing has named the user yet.
_FIRST = {
    "i": "the user",
    "me": "the user",
    "my": "the user's",
    "mine": "the user's",
    "myself": "the user",
    "i'm": "the user is",
    "i've": "the user has",
    "i'd": "the user would",
    "i'll": "the user will",
}

_FIRST_PERSON = re.compile(
    r"\b(?:I(?:'m|'ve|'d|'ll|’m|’ve|’d|’ll)?|me|my|mine|myself)\b", re.IGNORECASE
)
_LEADING_I = re.compile(
    r"^I(?:(?P<contraction>'m|'ve|'d|'ll|’m|’ve|’d|’ll)|\s+(?P<rest>.*))", re.DOTALL | re.IGNORECASE
)
_TRAILING_PUNCT = re.compile(r"[\s.!。！~…]+$")


def standalone(clause: str, speaker: str = "user") -> str:
    """A clause rewritten to stand alone: the speaker in the third person, closing punctuation.

    `speaker` is who "I" is: "user" or "assistant".
    """
    clause = clause.strip()
    first = {word: text.replace("the user", f"the {speaker}") for word, text in _FIRST.items()}
    if has_cjk(clause):
        return finish(re.sub(r"我(?!们)", "用户" if speaker == "user" else "助手", clause))
    named = False
    match = _LEADING_I.match(clause)
    if match:
        named = True
        if match.group("contraction"):
            clause = (
                first["i" + match.group("contraction").replace("’", "'").lower()]
                + clause[match.end() :]
            )
        else:
            clause = f"the {speaker} " + conjugate_third_person(match.group("rest"))
    elif re.match(r"^(?:my|me)\b", clause, re.IGNORECASE):
        named = True
        word = clause.split()[0].lower()
        clause = first[word] + clause[len(word) :]
    clause = _replace_first_person(clause, named, first)
    return finish(clause)


def finish(sentence: str) -> str:
    """Capitalized, with one closing period (。 for Chinese)."""
    sentence = _TRAILING_PUNCT.sub("", sentence.strip())
    if not sentence:
        return ""
    sentence = sentence[0].upper() + sentence[1:]
    return sentence + ("。" if has_cjk(sentence) else ".")


def conjugate_third_person(rest: str) -> str:
    """'always use vim' -> 'always uses vim': the verb after 'I', agreed with 'the user'."""
    words = rest.split(" ")
    for index, word in enumerate(words):
        lower = word.lower()
        if lower in ADVERBS:
            continue
        if lower in IRREGULAR:
            words[index] = IRREGULAR[lower]
            return " ".join(words)
        if lower in MODALS or not lower.isalpha():
            return rest
        words[index] = _add_s(word)
        return " ".join(words)
    return rest


def _add_s(verb: str) -> str:
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def _replace_first_person(text: str, named: bool, first: dict[str, str]) -> str:
    out = []
    position = 0
    for match in _FIRST_PERSON.finditer(text):
        word = match.group(0).replace("’", "'").lower()
        if word == "i" and text[match.end() : match.end() + 1] == ".":
            continue  # "i.e." is not the pronoun
        out.append(text[position : match.start()])
        out.append(_LATER[word] if named else first[word])
        named = True
        position = match.end()
    out.append(text[position:])
    return "".join(out)
