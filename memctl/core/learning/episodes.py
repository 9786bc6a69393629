"""Episodes: what a stretch of conversation becomes in long-term memory (offline drafting).

The extractive path keeps the turns' own sentences: a summary of about `ratio` of their
length (sentence centrality, from memctl.core.learning.summarize), the decisions and outcomes stated,
the key topics, and an importance score in which decisions and failures weigh more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memctl.core.language.sentences import split_sentences, strip_code_blocks
from memctl.core.language.tokens import estimate_tokens
from memctl.core.learning.conversation import Turn

if TYPE_CHECKING:
    from memctl.core.learning.summarize import Embed

TOOL_OUTPUT_CHARS = 500  # long tool output is clipped before summarizing (seed rule)
# Why: a quarter of a five-line exchange is one sentence; short stretches keep this much.
MIN_SUMMARY_CHARS = 240
MAX_LISTED = 8
ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System"}

_FAILURE = re.compile(
    r"\b(?:fail(?:ed|s|ure)?|error|bug|broke|broken|crash(?:ed|es)?|regression|outage|incident|"
    r"rollback|rolled back|revert(?:ed)?)\b|失败|错误|故障|回滚|崩溃",
    re.IGNORECASE,
)
# Why: the summarizer's outcome cues miss plain reports such as "done" or "dropped to 0.2%".
_MORE_OUTCOMES = re.compile(
    r"\b(?:done|dropped|rose|fell|recovered|back to normal|went (?:up|down)|works?|worked)\b"
    r"|恢复|下降|上升",
    re.IGNORECASE,
)
# A pasted test or build log ("--- FAIL: TestX", "Error: ...") states the problem, not an outcome.
_PASTED_FAILURE = re.compile(r"^\W*(?:FAIL|ERROR|Error:|Traceback)|\w\.\w{1,5}:\d+:")
_TERM = re.compile(r"[#@]?[\w][\w.+/#@%-]*", re.UNICODE)
_CJK_NUMBER = re.compile(r"\d+(?:\.\d+)?[%％]?")
_EXPLICIT = re.compile(
    r"\b(?:remember|always|never|from now on|prefer)\b|记住|以后|总是|不要", re.IGNORECASE
)


@dataclass
class EpisodeDraft:
    title: str
    summary: str
    key_topics: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    preferences: list[str] = field(default_factory=list)
    importance: float = 0.5
    writer: str = "extractive"

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "summary": self.summary,
            "key_topics": self.key_topics,
            "decisions": self.decisions,
            "outcomes": self.outcomes,
            "facts": self.facts,
            "preferences": self.preferences,
            "importance": self.importance,
            "writer": self.writer,
        }


# The agent narrating its own work ("Let me check…", "Now I'll…", "Done.", "Perfect!"): what it
# is about to do or a cheer, never what happened or why.
_NARRATION = re.compile(
    r"^(?:[*_#>\s-]*)(?:let me|let's|now\b|next\b|first,|then,|done\b|good\b|great\b|perfect\b|"
    r"excellent\b|okay\b|ok\b|alright\b|sure\b|got it\b|i'll|i will|i'm going to|i am going to|"
    r"i need to|i should|i can see|i see\b|i now|i've now|i understand|here's|here is|"
    r"looking at|checking|running|all green|you're right|you are right|absolutely|"
    r"understood|thanks|thank you|great question|this (?:is|was) (?:a )?(?:good|great)|"
    r"looks like|found it|all done|first,? i\b|next,? i\b|no response requested)",
    re.IGNORECASE,
)
# The agent reporting what it did in the first person: the report is kept, the "I" is not
# ("I've fixed the parser" -> "Fixed the parser"; "I found that X" -> "X").
_FIRST_PERSON_REPORT = re.compile(
    r"^(?:[*_#>\s-]*)(?:i've|i have|i)\s+(?:now\s+|also\s+|just\s+)?"
    r"(?=(?:\w+ed|made|built|found|wrote|ran|set|put|kept|left|split|cut|rewritten|done)\b)",
    re.IGNORECASE,
)
_FOUND_THAT = re.compile(r"^(?:[*_#>\s-]*)i found (?:that |out that )?", re.IGNORECASE)
# A user turn that says the agent's last claim was wrong ("no, it still fails", "that's not
# fixed", "wrong file"): the claim must not become the episode's outcome.
_REFUTES = re.compile(
    r"^(?:no\b|nope\b|wrong\b|not\s+(?:fixed|resolved|done|working|true|quite|really)|"
    r"that'?s\s+(?:not|wrong)|this\s+is\s+(?:not|wrong)|it'?s\s+(?:not|still)|"
    r"(?:it|that|this)\s+(?:still|didn'?t|doesn'?t|does not|did not|is still)|still\b|"
    r"you\s+(?:didn'?t|did not|broke|missed)|why\s+(?:did|are|is)\b|"
    r"(?:it|that|this)\s+(?:is|was)\s+not\b|不对|不是|还是不行|没有修好|错了)",
    re.IGNORECASE,
)
# User turns whose words are the agent's or a tool's, not the person's: a plan handed back,
# a lead agent's message, a background task's notice, a compaction summary.
_AGENT_WRITTEN = re.compile(
    r"^\s*(?:Implement the following plan:|<teammate-message\b|<task-notification>|"
    r"This session is being continued from a previous conversation|Caveat: The messages below)",
    re.IGNORECASE,
)


def is_narration(sentence: str) -> bool:
    """The agent narrating its own work, or a lead-in that ends with a colon."""
    text = sentence.strip()
    return bool(_NARRATION.match(text)) or text.endswith((":", "：", "..."))


# A refutation later in the user's turn: "hmm, I just checked X and none of the files has a
# date", "I ran it and the warnings are still there".
_REFUTES_WITHIN = re.compile(
    r"\b(?:still (?:there|fails?|failing|broken|happening|the same|an issue|get(?:ting)?|see(?:ing)?|"
    r"not|no)|none of|doesn'?t work|didn'?t work|not working|not fixed|isn'?t fixed|"
    r"(?:that'?s|this is|it'?s) (?:not|wrong)|is wrong|are wrong)\b",
    re.IGNORECASE,
)
_ASSENT = re.compile(
    r"^\W*(?:y(?:es|ep|eah)?|ok(?:ay)?|sure|go|do it|proceed|continue|\d+)\W*$", re.I
)


def refutes(user_text: str, *, claims_only: bool = False) -> bool:
    """Whether a user turn says the agent's claim before it was wrong. `claims_only`: not a
    question about what the agent did ("why did you add X?" objects to an action; what the
    agent said before it may still be true)."""
    text = user_text.strip()
    if claims_only and re.match(r"^\W*why\b", text, re.IGNORECASE):
        return False
    return bool(_REFUTES.match(text) or _REFUTES_WITHIN.search(text[:300]))


def refuted_turns(turns: Sequence[Turn], *, claims_only: bool = False) -> set[int]:
    """Indexes of the assistant turns a user turn refutes: every agent turn since the user's
    last real request (an "ok" or "yes" is not one), since the claim may be from any of them."""
    refuted: set[int] = set()
    since_request: list[int] = []
    for index, turn in enumerate(turns):
        if turn.role == "assistant":
            since_request.append(index)
        elif turn.role == "user" and not _AGENT_WRITTEN.match(turn.content):
            if since_request and refutes(turn.content, claims_only=claims_only):
                refuted.update(since_request)
                since_request = []
            elif not _ASSENT.match(turn.content):
                since_request = []
    return refuted


def turn_sentences(turns: Sequence[Turn]) -> list[tuple[str, str]]:
    """(role, sentence) pairs of the conversational turns, tool output clipped. Left out: the
    agent's narration, the claims of an agent turn the user refuted next, and user turns the
    agent wrote (a plan handed back)."""
    pairs: list[tuple[str, str]] = []
    refuted = refuted_turns(turns)
    for index, turn in enumerate(turns):
        if turn.role == "system" or index in refuted:
            continue
        if turn.role == "user" and _AGENT_WRITTEN.match(turn.content):
            continue
        text = turn.content
        if turn.role == "tool" and len(text) > TOOL_OUTPUT_CHARS:
            text = text[:TOOL_OUTPUT_CHARS]
        for sentence in _line_sentences(strip_code_blocks(text)):
            if turn.role == "assistant":
                if is_narration(sentence):
                    continue
                sentence = _without_first_person(sentence)
            elif turn.role == "user":
                sentence = _without_lead_in(sentence)
            if sentence:
                pairs.append((turn.role, sentence))
    return pairs


def _without_first_person(sentence: str) -> str:
    found = _FOUND_THAT.sub("", sentence)
    if found != sentence:
        return found[:1].upper() + found[1:]
    match = _FIRST_PERSON_REPORT.match(sentence)
    if not match:
        return sentence
    rest = sentence[match.end() :]
    return rest[:1].upper() + rest[1:]


# How people open what they say to an agent ("ok, ...", "okay so ...", "let's ...", "looks
# like ..."): the request or report is the rest; the lead-in read alone is an acknowledgement,
# a hedge or a step being narrated.
_LEAD_IN = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|all right|yes|yeah|yep|hmm+)\b(?![-'])[\s,.!:;]*"
    r"|(?:great|perfect|cool|nice|well|right|sure|so)[,.!]+\s*)+"
    r"(?:so\s+)?(?:(?:let'?s|let us)\s+)?|^(?:let'?s|let us)\s+"
    r"|^(?:it\s+)?(?:looks|seems)\s+like\s+(?:here\s*,\s*)?",
    re.IGNORECASE,
)


def _without_lead_in(sentence: str) -> str:
    """A user's sentence without "ok," / "let's" in front; "" when nothing else is left."""
    rest = _LEAD_IN.sub("", sentence, count=1)
    if rest == sentence:
        return sentence
    return rest[:1].upper() + rest[1:] if re.search(r"\w", rest) else ""


_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")


def _line_sentences(text: str) -> list[str]:
    """Sentences, a list item or a line of its own counting as one even without a period
    (agents answer in Markdown lists; run together, their items read as one long sentence)."""
    found: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).replace("**", "").strip(" #>")
        if line:
            found.extend(split_sentences(line))
    return found


def label_runs(pairs: Sequence[tuple[str, str]]) -> str:
    """Sentences grouped by speaker: one `User: ...` line per run of one role."""
    lines: list[str] = []
    current = None
    for role, sentence in pairs:
        if role != current:
            lines.append(f"{ROLE_LABELS.get(role, role.title())}: {sentence}")
            current = role
        else:
            lines[-1] += ("" if re.search(r"[。！？]$", lines[-1]) else " ") + sentence
    return "\n".join(lines)


def fact_terms(sentence: str) -> set[str]:
    """What a summary must not lose from a sentence: numbers, identifiers and names."""
    from memctl.core.learning.summarize import STOPWORDS

    terms = set()
    for index, word in enumerate(_TERM.findall(sentence)):
        word = word.strip(".,:;'\"")
        if not word:
            continue
        identifier = any(ch.isdigit() or ch in "#_/@" for ch in word)
        name = (
            word[0].isupper() and (index > 0 or word.isupper()) and word.casefold() not in STOPWORDS
        )
        if identifier or name:
            terms.add(word.casefold())
    terms.update(_CJK_NUMBER.findall(sentence))
    return terms


def _chosen_indices(sentences: Sequence[str], joined: str) -> list[int]:
    """Which sentences summarize() kept: it joins them in order, so find them again."""
    chosen, cursor = [], 0
    for i, sentence in enumerate(sentences):
        at = joined.find(sentence, cursor)
        if at != -1 and not joined[cursor:at].strip():
            chosen.append(i)
            cursor = at + len(sentence)
    return chosen


def extractive_summary(
    pairs: Sequence[tuple[str, str]], ratio: float, embed: Embed | None = None, min_chars: int = 0
) -> str:
    """Gist, then facts: half the length by sentence centrality, the rest by coverage.

    The second half goes to the sentences that add the most names, numbers, identifiers,
    decisions and outcomes not yet in the summary, so those survive the compression.
    """
    # Why: summarize imports numpy; loading it only when summarizing keeps `--help` fast.
    from memctl.core.learning.summarize import find_decisions, find_outcomes, summarize

    sentences = [sentence for _, sentence in pairs]
    if not sentences:
        return ""
    total = sum(len(s) for s in sentences)
    ratio = max(ratio, min(1.0, min_chars / total))
    chosen = set(_chosen_indices(sentences, summarize(sentences, ratio=ratio / 2, embed=embed)))
    covered = set().union(*(fact_terms(sentences[i]) for i in chosen)) if chosen else set()
    length = sum(len(sentences[i]) for i in chosen)
    ceiling = (ratio + 0.05) * total
    terms = [fact_terms(s) for s in sentences]
    weight = [
        2 * bool(find_decisions(s)) + bool(find_outcomes(s) or _MORE_OUTCOMES.search(s))
        for s in sentences
    ]
    while length < ratio * total:
        best, best_gain = None, 0.0
        for i, sentence in enumerate(sentences):
            if i in chosen or length + len(sentence) > ceiling:
                continue
            gain = (len(terms[i] - covered) + weight[i]) / max(len(sentence), 40)
            if gain > best_gain:
                best, best_gain = i, gain
        if best is None:
            break
        chosen.add(best)
        covered |= terms[best]
        length += len(sentences[best])
    return label_runs([pairs[i] for i in sorted(chosen)])


def conversation_importance(text: str, decisions: Sequence[str], outcomes: Sequence[str]) -> float:
    """0.5, more for decisions, outcomes, failures and explicit instructions; at most 0.9."""
    score = 0.5
    if decisions:
        score += 0.1
    if outcomes:
        score += 0.05
    if _FAILURE.search(text):
        score += 0.1
    if _EXPLICIT.search(text):
        score += 0.05
    return round(min(score, 0.9), 2)


TITLE_CHARS = 90


def user_request(turns: Sequence[Turn]) -> str:
    """The user's first request in these turns, in their words: the opening sentence of a user
    turn, three words or more, mostly letters (not a pasted log); "" when there is none."""
    for turn in turns:
        if turn.role != "user" or _AGENT_WRITTEN.match(turn.content):
            continue
        for sentence in split_sentences(strip_code_blocks(turn.content)):
            words = (_without_lead_in(sentence) or sentence).split()
            if len(words) >= 3 and sum(ch.isalpha() for ch in sentence) > 0.6 * len(sentence):
                return " ".join(words)
            break
    return ""


def worth_an_episode(turns: Sequence[Turn]) -> bool:
    """Whether a stretch of conversation is worth an episode: the user asked for something in
    it. A stretch of the agent working on alone (its replies to "/rename", its reports after a
    request an earlier episode holds) tells nothing an episode could be found by."""
    return bool(user_request(turns))


def episode_title(turns: Sequence[Turn], topics: Sequence[str]) -> str:
    """What the user asked for, in their words (the first request of three words or more);
    else the topics; cut at a word boundary, never mid-word."""
    request = user_request(turns)
    if request:
        return _word_cut(request, TITLE_CHARS)
    if topics:
        names = list(topics[:3])
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"Conversation about {listed}"
    for turn in turns:
        if turn.role == "user" and turn.content.strip():
            return _word_cut(" ".join(turn.content.split()), TITLE_CHARS)
    return "Conversation"


def _word_cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return cut or text[:limit]


def draft_conversation(
    turns: Sequence[Turn], *, ratio: float = 0.25, embed: Embed | None = None
) -> EpisodeDraft:
    """An episode from turns without an LLM: their own sentences, nothing made up."""
    from memctl.core.learning.summarize import find_decisions, find_outcomes, key_topics

    pairs = turn_sentences(turns)
    text = "\n".join(sentence for _, sentence in pairs)
    decisions = find_decisions(text)[:MAX_LISTED]
    outcomes = [
        s
        for _, s in pairs
        if (find_outcomes(s) or _MORE_OUTCOMES.search(s))
        and s not in decisions
        and not _PASTED_FAILURE.search(s)
    ]
    outcomes = list(dict.fromkeys(outcomes))[:MAX_LISTED]
    topics = key_topics(text, 5)
    return EpisodeDraft(
        title=episode_title(turns, topics),
        summary=extractive_summary(pairs, ratio, embed, MIN_SUMMARY_CHARS),
        key_topics=topics,
        decisions=decisions,
        outcomes=outcomes,
        importance=conversation_importance(text, decisions, outcomes),
    )


def roll_summary(
    previous: str,
    addition: str,
    max_tokens: int,
    *,
    count=estimate_tokens,
    embed: Embed | None = None,
) -> str:
    """The session's rolling summary with `addition` appended; older parts shrink to make room."""
    previous, addition = previous.strip(), addition.strip()
    combined = "\n".join(part for part in (previous, addition) if part)
    if not combined or count(combined) <= max_tokens:
        return combined
    if count(addition) > max_tokens // 2:
        addition = _shrink(addition, 0.9 * (max_tokens // 2) / count(addition), embed)
    room = max_tokens - count(addition)
    previous = (
        _shrink(previous, 0.9 * room / count(previous), embed) if previous and room > 0 else ""
    )
    return "\n".join(part for part in (previous, addition) if part)


def _shrink(text: str, ratio: float, embed: Embed | None) -> str:
    """Re-summarize a labelled summary (`User: ...` lines) to about `ratio` of its length."""
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        label, _, rest = line.partition(": ")
        role = next((k for k, v in ROLE_LABELS.items() if v == label), None)
        pairs.extend((role or "user", s) for s in split_sentences(rest if role else line))
    return extractive_summary(pairs, ratio=max(0.02, min(ratio, 1.0)), embed=embed)


def _section(title: str, items: Sequence[str]) -> list[str]:
    if not items:
        return []
    return ["", f"## {title}", *(f"- {item}" for item in items)]


def render_episode_body(draft: EpisodeDraft) -> str:
    lines = ["## Summary", draft.summary.strip() or "_(nothing to summarize)_"]
    lines += _section("Decisions", draft.decisions)
    lines += _section("Facts", draft.facts)
    lines += _section("Preferences", draft.preferences)
    lines += _section("Outcomes", draft.outcomes)
    return "\n".join(lines) + "\n"
