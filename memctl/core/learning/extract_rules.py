"""Rule-based extraction of explicitly stated memories, in English and Chinese (no LLM).

Only the user's turns are read, plus decisions stated by either side ("we decided", "我们决定").
Only explicit statements count: a sentence must carry one of the cues below, and what is
stored is that sentence made standalone (third person, or an imperative), never an inference.
Questions and vague objects ("I like that", "我喜欢这个") are skipped.

Types and confidence (the cue's strength):
  profile     name 0.9; "my <timezone|email|role...> is" 0.85; work at / live in / from 0.8;
              "I am a ..." 0.75
  preference  "I prefer", "my favorite" 0.85; "I always/never" (a habit) 0.85; "I hate" 0.8;
              "I don't like"/"I dislike" 0.75; "I love" 0.75; "I like"/"I enjoy" 0.7
  procedural  imperative rules ("Always ...", "Never ...", "Don't ever ...", "from now on",
              "以后请", "不要", "总是") 0.9; how-tos ("to deploy, run ...", "the way to X is")
              0.8; lessons that say what to do ("lesson learned", "the fix was") 0.75-0.8
  semantic    decisions ("we decided/agreed" 0.9, "let's use" 0.75); facts after "remember
              that" 0.9 / "note that" 0.8; findings ("it turned out", "the root cause was") 0.7
A wrapper ("remember that", "from now on", "记住", "以后请") around another statement keeps
the inner statement's type and raises its confidence to the wrapper's.
"""

from __future__ import annotations

import re
from dataclasses import replace

from memctl.core.language.sentences import split_sentences, strip_code_blocks
from memctl.core.learning.conversation import Candidate, Turn
from memctl.core.learning.phrasing import standalone
from memctl.core.learning.subjects import (
    clause_core,
    clause_subject,
    content_words,
    normalize,
    object_subject,
    subject_key,
    verb_subject,
)

SOURCE = "explicit_user_input"

_DISCOURSE = re.compile(
    r"^(?:(?:also|and|oh|btw|by the way|ok(?:ay)?|so|well|actually|one more thing|hey|hi|"
    r"hello|anyway|alright|right|yeah|yes|no|ps|另外|还有|对了|顺便说一下|顺便|好的|嗯|哦|其实|"
    r"说实话)\s*[,，:：!！]?\s+|(?:另外|还有|对了|好的|嗯|其实|说实话)[,，:：]?)+",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:(?:do|does|did|can|could|would|should|shall|is|are|was|were|will|won't|shouldn't)\s+"
    r"(?:you|we|i|it|they|there|this|that)\b|what\b|why\b)",
    re.IGNORECASE,
)
# Where a first-person statement may begin inside a sentence.
_EN_CLAUSE = (
    r"(?:^|[,;:—–]\s*|\b(?:and|but|so|because|though|also|honestly|personally|generally|"
    r"actually|really|just)\s+)"
)
_ZH_CLAUSE = r"(?:^|[，,；;：:]|其实|另外|还有|而且|但是|不过|所以|平时|一般|个人)"
_VAGUE_OBJECT = re.compile(
    r"^(?:it|this|that|these|those|them|you|him|her|what|how|when|so|too|to see|very much)\b|"
    r"^(?:这|那|它|你|他|她)",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(
    r"(?:[,;]\s*|\s+)(?:and|but|also|plus)\s+(?=(?-i:I|i|my|My|we|We)\b)|;\s+|"
    r"(?<=[，,；;])\s*(?=我)",
    re.IGNORECASE,
)
_NOT_AFTER_ALWAYS = re.compile(
    r"^(?:a|an|the|mind|again|ever|been|had|was|is|be|have|did)\b", re.IGNORECASE
)
_ZH_SMALL_TALK = re.compile(r"^(?:担心|客气|着急|紧张|介意|谢|麻烦)")
IMPERATIVE_VERBS = (
    "run|use|execute|call|type|invoke|install|set|add|edit|open|push|pull|merge|deploy|restart|"
    "build|start|stop|check|export|source|create|make|cd|ssh|go|pass|bump|tag|update|clear|"
    "delete|remove|enable|disable|copy|kubectl|docker|npm|pnpm|yarn|git|pip|uv|just|first"
)
PROFILE_ATTRIBUTES = (
    "timezone|time zone|email|e-mail|pronouns|role|job title|title|job|team|manager|"
    "github username|github handle|username|birthday|location|company|employer|native language|"
    "first language|phone"
)


def extract_candidates(turns: list[Turn]) -> list[Candidate]:
    """Candidates in conversation order; a repeated statement appears once, at its strongest."""
    found: list[Candidate] = []
    position: dict[tuple[str, str], int] = {}
    for index, turn in enumerate(turns):
        if turn.role not in ("user", "assistant") or _written_by_an_agent(turn):
            continue
        if turn.role == "user" and _SLASH_COMMAND.match(turn.content):
            continue  # a task handed to a command ("/gsd:quick restore the footer"), not a rule
        conceded = turn.role == "user" and _agent_conceded(turns[index + 1 :])
        for sentence in split_sentences(_without_pasted_blocks(strip_code_blocks(turn.content))):
            for candidate in extract_sentence(sentence, turn.role, conceded=conceded):
                candidate = replace(
                    candidate,
                    text=dated(candidate.text, turn.timestamp),
                    line=turn.line,
                    last_line=turn.last_line,
                )
                key = (candidate.type, candidate.text.casefold())
                if key in position:
                    earlier = found[position[key]]
                    if candidate.confidence > earlier.confidence:
                        found[position[key]] = replace(earlier, confidence=candidate.confidence)
                    continue
                position[key] = len(found)
                found.append(candidate)
    return found


# User turns whose words are not the person's: a plan the agent wrote, handed back to it; a
# message from a lead agent to a teammate agent; a background task's notification.
_AGENT_WRITTEN = re.compile(
    r"^\s*(?:Implement the following plan:|<teammate-message\b|<task-notification>|"
    r"This session is being continued from a previous conversation|Operation stopped by hook:|"
    r"Caveat: The messages below)",
    re.IGNORECASE,
)


_SLASH_COMMAND = re.compile(r"^\s*/[\w:.-]+(?:\s|$)")
# A Markdown indented block (four spaces or a tab after a blank line): text the user pasted.
_INDENTED_BLOCK = re.compile(r"(?:^|\n)[ \t]*\n(?:(?: {4}|\t)[^\n]*(?:\n|$)| *(?:\n|$))+")


def _without_pasted_blocks(text: str) -> str:
    """The user's own words, without what they pasted as an indented block."""
    return _INDENTED_BLOCK.sub("\n\n", text)


def _written_by_an_agent(turn: Turn) -> bool:
    return turn.role == "user" and bool(_AGENT_WRITTEN.match(turn.content))


# The agent's reply that grants a user's point ("Good call", "You're right", "Fair point"):
# the question before it was a correction, not a question.
_CONCESSION = re.compile(
    r"^\W*(?:good|great|fair|excellent)\s+(?:call|catch|point|idea|suggestion)\b|"
    r"^\W*(?:you'?re|you are)\s+(?:absolutely\s+|totally\s+|quite\s+)?(?:right|correct)\b|"
    r"^\W*(?:agreed|absolutely|makes sense|fair enough|indeed)\b",
    re.IGNORECASE,
)


def _agent_conceded(after: list[Turn]) -> bool:
    """Whether the agent's first reply after a user turn grants the user's point."""
    reply = next((t for t in after if t.role in ("assistant", "user")), None)
    return (
        reply is not None and reply.role == "assistant" and bool(_CONCESSION.match(reply.content))
    )


def extract_sentence(
    sentence: str, role: str = "user", *, conceded: bool = False
) -> list[Candidate]:
    """What one sentence states explicitly: one candidate per clause that carries a cue.

    `conceded`: the agent's reply granted the user's point, so a question such as "why aren't
    we using X?" or "can't the tests be Y?" was a correction."""
    evidence = sentence.strip()
    if role not in ("user", "assistant"):
        return []
    if role == "user" and _is_question(evidence):
        # Why: people correct agents with questions ("why are you writing TypeScript?").
        asked = _DISCOURSE.sub("", evidence).strip()
        candidate = _asked_correction(asked) or (_conceded_question(asked) if conceded else None)
        return [replace(candidate, evidence=evidence)] if candidate else []
    if _is_question(evidence):
        return []
    found = []
    for clause in split_clauses(evidence):
        text = _DISCOURSE.sub("", clause).strip()
        if not text or _is_question(text):
            continue
        if role == "assistant":
            candidate = _decision(text, role)
        else:
            candidate = _statement(text) or _spoken_rule(text, evidence)
        if candidate is not None:
            origin = "agent" if role == "assistant" else "user"
            found.append(replace(candidate, evidence=evidence, origin=origin))
    return found


def split_clauses(sentence: str) -> list[str]:
    """Split before a new first-person clause: "My name is Ana and I work at Acme"."""
    parts = _CLAUSE_BREAK.split(sentence)
    return [part.strip(" ,，;；") for part in parts if part.strip(" ,，;；")]


def _statement(text: str) -> Candidate | None:
    for rule in (_wrapped, _favorite, _profile, _preference, _decision, _rule, _procedure, _lesson):
        candidate = rule(text)
        if candidate is not None:
            return candidate
    return None


def _make(text: str, type_: str, confidence: float, kind: str, subject: str) -> Candidate | None:
    if not text:
        return None
    return Candidate(text, type_, confidence, SOURCE, subject_key(kind, subject), "")


# --- wrappers: "remember that X", "from now on X", "记住X", "以后请X" -----------------------


def _wrapper(cue: str, after: str = r"(?:\s+that|\s*[:,])") -> re.Pattern[str]:
    return re.compile(rf"^(?:please\s+)?(?:{cue}){after}\s*(.+)", re.IGNORECASE)


# (pattern, confidence, what the inner text is when it holds no other statement)
_WRAPPERS = (
    (
        _wrapper("remember|don't forget|do not forget", r"(?:\s+that|\s*[:,]|(?=\s+to\s))"),
        0.9,
        "fact",
    ),
    (_wrapper("keep in mind|bear in mind"), 0.85, "fact"),
    (_wrapper("note|fyi|for the record"), 0.8, "fact"),
    (_wrapper("from now on|going forward|henceforth|in the future", r"\s*[,:]?"), 0.9, "rule"),
    (re.compile(r"^(?:请)?(?:记住|牢记|记好)[，,：:]?(.+)"), 0.9, "fact"),
    (re.compile(r"^(?:请)?(?:以后|今后|从现在开始|从今以后|之后)[，,]?(?:请)?(.+)"), 0.9, "rule"),
)


def _wrapped(text: str) -> Candidate | None:
    for pattern, confidence, fallback in _WRAPPERS:
        match = pattern.match(text)
        if not match:
            continue
        inner = match.group(1).strip()
        candidate = _statement(inner)
        if candidate is not None:
            return replace(candidate, confidence=max(candidate.confidence, confidence))
        said = re.sub(r"^please\s+|^请", "", text, flags=re.IGNORECASE)
        if fallback == "rule":
            return _make(standalone(said), "procedural", confidence, "rule", verb_subject(inner))
        if re.match(r"^to\s", inner, re.IGNORECASE):  # "remember to run the migrations"
            subject = verb_subject(inner[3:])
            return _make(standalone(said), "procedural", confidence, "rule", subject)
        if len(content_words(inner)) < 2 and len(inner) < 4:
            return None
        return _make(standalone(inner), "semantic", confidence, "fact", clause_subject(inner))
    return None


# --- profile -----------------------------------------------------------------------------


def _en(clause: str) -> re.Pattern[str]:
    """A first-person English statement starting at a clause boundary."""
    return re.compile(_EN_CLAUSE + rf"(?P<clause>{clause})", re.IGNORECASE)


def _zh(clause: str) -> re.Pattern[str]:
    return re.compile(_ZH_CLAUSE + rf"(?P<clause>{clause})")


_NAME = r"(?P<obj>[^\s,.;!?]+(?:\s+(?-i:[A-Z])[\w'-]*){0,3})"  # "Ana", "ana", "Ana Souza"
# (pattern, confidence, profile attribute; None: the attribute the user named)
_PROFILE = (
    (_en(rf"my name is\s+{_NAME}"), 0.9, "name"),
    (_en(rf"(?:please\s+)?call me\s+{_NAME}"), 0.9, "name"),
    (_en(rf"my (?P<attr>{PROFILE_ATTRIBUTES}) is\s+(?P<obj>.+)"), 0.85, None),
    (
        _en(r"I(?: currently)? (?:work|am working|'m working) (?:at|for)\s+(?P<obj>.+)"),
        0.8,
        "employer",
    ),
    (_en(r"I(?: currently)? (?:live in|am based in|'m based in)\s+(?P<obj>.+)"), 0.8, "location"),
    (_en(r"I(?: am|'m) from\s+(?P<obj>.+)"), 0.8, "origin"),
    (
        _en(r"I(?: am|'m) an?\s+(?!(?:bit|little|lot|tad|big fan|fan|huge fan)\b)(?P<obj>.+)"),
        0.75,
        "role",
    ),
    (
        _zh(r"我(?:叫|的名字是|的名字叫)(?P<obj>(?![你他她了人车])[^，,。！？!?\s]{1,12})"),
        0.9,
        "name",
    ),
    (_zh(r"我(?:现在)?在(?P<obj>[^，,。]+?)(?:工作|上班)"), 0.8, "employer"),
    (_zh(r"我(?:现在)?住在(?P<obj>[^，,。]+)"), 0.8, "location"),
    (_zh(r"我来自(?P<obj>[^，,。]+)"), 0.8, "origin"),
    (_zh(r"我是(?![说不想在因指问否觉])(?P<obj>[^，,。]+)"), 0.75, "role"),
)


def _profile(text: str) -> Candidate | None:
    for pattern, confidence, attribute in _PROFILE:
        match = pattern.search(text)
        if not match or _VAGUE_OBJECT.match(match.group("obj")):
            continue
        if attribute is None:
            attribute = normalize(match.group("attr"))
        return _make(standalone(match.group("clause")), "profile", confidence, "profile", attribute)
    return None


_FAVORITE = _en(r"my fav(?:ou?rite|e) (?P<attr>[\w -]{2,30}?) (?:is|are)\s+(?P<obj>.+)")


def _favorite(text: str) -> Candidate | None:
    match = _FAVORITE.search(text)
    if not match:
        return None
    return _make(
        standalone(match.group("clause")),
        "preference",
        0.85,
        "preference",
        normalize(match.group("attr")),
    )


# --- preferences --------------------------------------------------------------------------

_EN_PREFERENCE = _en(
    r"I(?:\s+(?:really|strongly|much|generally|usually|definitely|personally|also|still|"
    r"very much|absolutely|honestly))*\s+(?P<verb>prefer|would prefer|'d prefer|like|love|enjoy|"
    r"hate|dislike|can't stand|cannot stand|don't like|do not like|don't want|do not want)"
    r"\s+(?P<obj>.+)"
)
_EN_FAN = _en(r"I(?:'m| am) an? (?:big |huge )?fan of\s+(?P<obj>.+)")
_EN_HABIT = _en(r"I\s+(?P<verb>always|never)\s+(?P<obj>.+)")
_ZH_PREFERENCE = _zh(
    r"我(?:很|真的|非常|特别|还是|一般|通常|也)*(?P<verb>更喜欢|更偏好|偏好|倾向于|比较喜欢|不喜欢|"
    r"讨厌|受不了|不想要|喜欢|爱用|爱)(?P<obj>.+)"
)
_ZH_HABIT = _zh(r"我(?P<verb>总是|一直|从不|从来不)(?P<obj>.+)")
_PREFERENCE_CONFIDENCE = {
    "prefer": 0.85,
    "would prefer": 0.8,
    "'d prefer": 0.8,
    "like": 0.7,
    "love": 0.75,
    "enjoy": 0.7,
    "hate": 0.8,
    "dislike": 0.75,
    "can't stand": 0.8,
    "cannot stand": 0.8,
    "don't like": 0.75,
    "do not like": 0.75,
    "don't want": 0.75,
    "do not want": 0.75,
    "更喜欢": 0.85,
    "更偏好": 0.85,
    "偏好": 0.85,
    "倾向于": 0.8,
    "比较喜欢": 0.75,
    "喜欢": 0.7,
    "爱用": 0.75,
    "爱": 0.7,
    "不喜欢": 0.75,
    "讨厌": 0.8,
    "受不了": 0.8,
    "不想要": 0.75,
    "always": 0.85,
    "never": 0.85,
    "总是": 0.85,
    "一直": 0.8,
    "从不": 0.85,
    "从来不": 0.85,
}


_APPROVAL = re.compile(
    r"^(?:the|this|that|your|these|those)\b[^,.]{0,40}\b(?:idea|suggestion|approach|plan|"
    r"proposal|option|solution|direction)s?\b",
    re.IGNORECASE,
)


def _preference(text: str) -> Candidate | None:
    fan = _EN_FAN.search(text)
    if fan and not _VAGUE_OBJECT.match(fan.group("obj")):
        return _make(
            standalone(fan.group("clause")),
            "preference",
            0.7,
            "preference",
            object_subject(fan.group("obj")),
        )
    for pattern in (_EN_PREFERENCE, _EN_HABIT, _ZH_PREFERENCE, _ZH_HABIT):
        match = pattern.search(text)
        if not match:
            continue
        obj = match.group("obj").strip()
        if _APPROVAL.match(obj):
            return None  # "I like the CRDT idea": agreeing to a proposal, not a preference
        if (
            _VAGUE_OBJECT.match(obj)
            or _too_thin(obj)
            or re.match(r"^you\b|^你", obj, re.IGNORECASE)
        ):
            return None
        verb = match.group("verb").lower()
        subject = object_subject(obj) if pattern is not _EN_HABIT else verb_subject(obj)
        return _make(
            standalone(match.group("clause")),
            "preference",
            _PREFERENCE_CONFIDENCE[verb],
            "preference",
            subject,
        )
    return None


# --- decisions (either side) --------------------------------------------------------------

_EN_DECISION = re.compile(
    r"(?<!\bif )(?<!\bwhether )\bwe(?:'ve|\s+have|\s+all|\s+finally|\s+just|\s+both)*\s+"
    r"(?P<verb>decided|agreed|settled on|chose|went with)\s+(?P<prep>to|that|on|upon)?\s*"
    r"(?P<obj>.+)",
    re.IGNORECASE,
)
_EN_LETS = re.compile(
    r"^let's\s+(?P<verb>use|go with|stick with|switch to|adopt|keep)\s+(?P<obj>.+)", re.IGNORECASE
)
_ZH_DECISION = re.compile(
    r"我们(?:最终|最后|已经|一致|刚刚|都)*(?P<verb>决定|商定|约定|同意|确定)(?:了)?[，,：:]?(?P<obj>.+)"
)


def _decision(text: str, speaker: str = "user") -> Candidate | None:
    match = _EN_DECISION.search(text)
    if match and not _too_thin(match.group("obj")):
        verb, prep, obj = match.group("verb"), match.group("prep"), match.group("obj").strip()
        lead = text[match.start() : match.start("verb")]
        has = " has" if re.search(r"'ve|\bhave\b", lead, re.IGNORECASE) else ""
        sentence = f"the team{has} {verb} {prep + ' ' if prep else ''}{obj}"
        if prep == "that":
            subject = clause_subject(obj)
        elif prep == "to":
            subject = verb_subject(obj)
        else:
            subject = object_subject(obj)
        return _make(standalone(sentence, speaker), "semantic", 0.9, "decision", subject)
    match = _ZH_DECISION.search(text)
    if match and not _too_thin(match.group("obj")):
        sentence = f"团队{match.group('verb')}{match.group('obj')}"
        return _make(
            standalone(sentence, speaker),
            "semantic",
            0.9,
            "decision",
            verb_subject(match.group("obj")),
        )
    return None


def _lets(text: str) -> Candidate | None:
    match = _EN_LETS.match(text)
    if not match or _VAGUE_OBJECT.match(match.group("obj")) or _too_thin(match.group("obj")):
        return None
    verb, obj = match.group("verb"), match.group("obj")
    return _make(
        standalone(f"the team will {verb} {obj}"),
        "semantic",
        0.75,
        "decision",
        verb_subject(f"{verb.split()[0]} {obj}"),
    )


# --- imperative rules ---------------------------------------------------------------------

_EN_RULE = re.compile(
    r"^(?:please\s+)?(?P<cue>always|never|don't ever|do not ever|never ever|"
    r"make sure (?:to|you)?)\s+(?P<obj>.+)",
    re.IGNORECASE,
)
_ZH_RULE = re.compile(
    r"^(?:请)?(?P<cue>(?:永远|千万|一定|务必|绝对)?(?:不要|别|不准|禁止|不许)|总是|始终|一定要|务必|"
    r"每次都要?)(?P<obj>.+)"
)


def _rule(text: str) -> Candidate | None:
    lets = _lets(text)
    if lets is not None:
        return lets
    match = _EN_RULE.match(text)
    if match:
        obj = match.group("obj").strip()
        if _NOT_AFTER_ALWAYS.match(obj) or _too_thin(obj):
            return None
        cue = match.group("cue").lower()
        said = text[match.start("cue") :]
        if cue in ("don't ever", "do not ever", "never ever"):
            said = "never " + obj
        return _make(standalone(said), "procedural", 0.9, "rule", verb_subject(obj))
    match = _ZH_RULE.match(text)
    if match:
        obj = match.group("obj").strip()
        if _ZH_SMALL_TALK.match(obj) or _too_thin(obj):
            return None
        return _make(standalone(text), "procedural", 0.9, "rule", verb_subject(obj))
    return None


# --- procedures ---------------------------------------------------------------------------

_PROCEDURES = (
    re.compile(
        r"^(?:the\s+)?(?:best\s+|right\s+|correct\s+)?way to (?P<task>.+?) is (?:to |by )?"
        r"(?P<steps>.+)",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:in order )?to (?!be\b)(?P<task>[^,]+?),?\s+"
        r"(?:you\s+(?:need to|have to|should|must|can)\s+|just\s+|first\s+)?"
        rf"(?P<steps>(?:{IMPERATIVE_VERBS})\b.+)",
        re.IGNORECASE,
    ),
    re.compile(r"^(?:how to|steps to) (?P<task>[^:]+):\s*(?P<steps>.+)", re.IGNORECASE),
    re.compile(r"^the command (?:to|for) (?P<task>.+?) is (?P<steps>.+)", re.IGNORECASE),
    re.compile(r"^(?P<task>[^，,。]{2,20})的(?:方法|办法|方式|步骤|命令)是(?P<steps>.+)"),
    re.compile(
        r"^要(?P<task>[^，,。]{2,20})[，,](?:就|先|需要|得)?(?P<steps>(?:运行|执行|用|使用|跑).+)"
    ),
)


def _procedure(text: str) -> Candidate | None:
    for pattern in _PROCEDURES:
        match = pattern.match(text)
        if match and not _too_thin(match.group("steps")):
            return _make(
                standalone(text),
                "procedural",
                0.8,
                "procedure",
                normalize(match.group("task")) or match.group("task").strip(),
            )
    return None


# --- lessons ------------------------------------------------------------------------------

# Lessons that say what to do are procedural; findings about what was true are semantic.
_LESSON_PATTERNS = (
    (
        r"\b(?:the\s+)?lessons?(?:\s+(?:learned|learnt))?(?:\s+here)?\s*(?:is|was|:|,)\s*"
        r"(?:that\s+)?(?P<obj>.+)",
        "procedural",
        0.8,
    ),
    (r"\b(?:the|our)\s+(?:fix|solution|workaround)\s+(?:was|is)\s+(?P<obj>.+)", "procedural", 0.75),
    (r"\b(?:it\s+)?turn(?:s|ed)\s+out\s+(?:that\s+)?(?P<obj>.+)", "semantic", 0.7),
    (
        r"\bthe (?:root cause|real problem|underlying issue)\s+(?:was|is)\s+(?P<obj>.+)",
        "semantic",
        0.7,
    ),
    (r"教训是[，,：:]?(?P<obj>.+)", "procedural", 0.8),
    (r"(?:解决|修复)(?:办法|方法|方案)是(?P<obj>.+)", "procedural", 0.75),
    (r"(?:结果|后来|最后)发现(?P<obj>.+)", "semantic", 0.7),
    (r"根本原因是(?P<obj>.+)", "semantic", 0.7),
)
_LESSONS = tuple(
    (re.compile(pattern, re.IGNORECASE), type_, conf) for pattern, type_, conf in _LESSON_PATTERNS
)


def _lesson(text: str) -> Candidate | None:
    for pattern, type_, confidence in _LESSONS:
        match = pattern.search(text)
        if match and not _too_thin(match.group("obj")):
            said = text[match.start() :]
            return _make(
                standalone(said), type_, confidence, "lesson", clause_subject(match.group("obj"))
            )
    return None


def _too_thin(obj: str) -> bool:
    """An object with no content word ("it", "so much") states nothing durable."""
    core = clause_core(obj) or obj
    if re.search(r"[\u3400-\u9fff]", core):
        return len(re.sub(r"[^\u3400-\u9fffA-Za-z0-9]", "", core)) < 2
    return not content_words(core)


def _is_question(text: str) -> bool:
    stripped = text.rstrip()
    return (
        stripped.endswith(("?", "？"))
        or bool(_QUESTION_START.match(stripped))
        or bool(re.search(r"[吗呢][。！!]?$", stripped))
    )


# --- how people talk to coding agents ------------------------------------------------------
# Users rarely say "I prefer" or "we decided". They correct ("no, use pnpm", "why are you
# writing TypeScript?", "not the main branch, the release one"), state standing rules in
# passing ("full schema should not be updated ever"), and ask for the opposite ("instead, ...").

_WHY_ARE_YOU = re.compile(
    r"^why\s+(?:are|were|did|do)\s+you\s+(?:still\s+|even\s+|now\s+)?(?P<what>.+?)[?？]*$",
    re.IGNORECASE,
)
_COULD_NOT_BE = re.compile(
    r"^(?:can't|cannot|couldn't|shouldn't|wouldn't)\s+(?P<subject>(?:the|these|those|our|we|"
    r"you|it|this|that)\b[^?]*?)\s+(?P<verb>be|use|just)\b\s*(?P<rest>[^?]+?)[?？]*$",
    re.IGNORECASE,
)
_OBLIGATION = re.compile(
    r"\b(?:should|must|shall|has to|have to|needs? to)\s*(?:n't|not)?\s+"
    r"(?:never|always|ever|only|be\b|not\b|stay|use|go|keep|branch|run|live|come)",
    re.IGNORECASE,
)
_STRONG_OBLIGATION = re.compile(
    r"\b(?:should(?:n't| not)?|must(?:n't| not)?)\b[^.]*\b(?:ever|never|always|only|at all)\b|"
    r"\b(?:never|always)\b",
    re.IGNORECASE,
)
_NEGATIVE_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?P<cue>don't|do not|dont|stop|avoid|no more|no)\s+(?P<obj>.+)",
    re.IGNORECASE,
)
_INSTEAD = re.compile(r"\binstead\b|\brather than\b", re.IGNORECASE)
_NOT_BUT = re.compile(
    r"^(?:no[,.!]?\s+)?(?:it's\s+|use\s+)?not\s+(?P<wrong>[^,;]{2,60}?)\s*[,;]\s*(?:but\s+|use\s+)?"
    r"(?P<right>[^,;]{2,80})$",
    re.IGNORECASE,
)
_WANT = re.compile(
    r"^I(?:'d| would)?\s+(?:really\s+)?(?:like|want|prefer)\s+(?P<obj>(?:all|every|each|"
    r"to use|to always|to never)\b.+)",
    re.IGNORECASE,
)
# A standing request about how to work, said in the imperative ("use pnpm", "push directly
# to main", "no co-author lines"): the verbs of a workflow, not of one task.
_WORKFLOW_IMPERATIVE = re.compile(
    r"^(?:please\s+|p\w{0,2}l\w{1,3}se\s+|always\s+|just\s+)*(?P<verb>use|push|commit|branch|run|"
    r"write|keep|prefer|test|format|name|put|target|base)\b\s+(?P<obj>.+)",
    re.IGNORECASE,
)
_STANDING_HINT = re.compile(
    r"\b(?:directly|always|never|every time|each time|from now|by default|only|ever|"
    r"instead|rather|without|no\s+\w+)\b",
    re.IGNORECASE,
)
_ONE_OFF = re.compile(
    r"^(?:and\s+)?(?:commit|push|merge|deploy)(?:\s+(?:this|it|that|these|them|now))*[.!]*$",
    re.IGNORECASE,
)
_TASK_OBJECT = re.compile(r"^(?:this|that|it|these|those|them)\b", re.IGNORECASE)
MAX_RULE_CHARS = 240  # a longer sentence is a task description, not a rule


def _spoken_rule(text: str, evidence: str) -> Candidate | None:
    """A correction or standing request said the way people talk to an agent."""
    if len(text) > MAX_RULE_CHARS or _ONE_OFF.match(text) or _looks_like_output(text):
        return None
    rules = (_not_but, _unwanted, _negative_request, _instead, _obligation, _want)
    for rule in (*rules, _workflow_request):
        candidate = rule(text)
        if candidate is not None:
            return candidate
    return None


def _looks_like_output(text: str) -> bool:
    """Pasted logs, paths and stack traces are not what the user asks for."""
    letters = sum(ch.isalpha() or ch.isspace() for ch in text)
    return (
        letters < 0.75 * len(text)
        or bool(re.search(r"\b(?:Error|FAIL|Traceback)\b", text))
        or bool(re.search(r"\w\.\w{1,5}:\d+", text))  # file.go:650
    )


def _asked_correction(question: str) -> Candidate | None:
    """ "Why are you writing TypeScript?" -> the user objected to the agent writing TypeScript;
    "can't the tests be table driven?" -> the tests should be table driven."""
    if len(question) > MAX_RULE_CHARS:
        return None
    match = _WHY_ARE_YOU.match(question)
    if match and not _too_thin(match.group("what")):
        what = match.group("what").strip()
        said = f"the user objected to the agent {what}; do not {_base_form(what)}"
        return _make(finish_sentence(said), "preference", 0.75, "rule", verb_subject(what))
    match = _COULD_NOT_BE.match(question)
    if match and not _too_thin(match.group("rest")):
        subject = match.group("subject").strip()
        verb = match.group("verb").lower()
        said = f"{subject} should {'' if verb == 'just' else verb + ' '}{match.group('rest')}"
        return _make(standalone(said), "preference", 0.7, "preference", clause_subject(said))
    return None


_WHY_NOT_WE = re.compile(
    r"^why\s+(?:aren'?t|are\s+(?:we|you)\s+not|don'?t|do\s+(?:we|you)\s+not|not)\s+"
    r"(?:we\s+|you\s+)?(?P<what>.+?)[?？]*$",
    re.IGNORECASE,
)
_COULD_NOT = re.compile(
    r"^(?:can'?t|cannot|couldn'?t|shouldn'?t|wouldn'?t)\s+(?:(?P<person>we|you)\s+|"
    r"(?P<subject>(?:the|these|those|our|this|that|all)\s+[\w.-]+)\s+)(?P<rest>[^?]+?)[?？]*$",
    re.IGNORECASE,
)


def _conceded_question(question: str) -> Candidate | None:
    """A suggestion asked as a question that the agent granted: "why aren't we using
    table-driven tests?" -> "Prefer using table-driven tests."; "can't we reuse the parser?"
    -> "Reuse the parser."; "can't the tests be table driven?" -> "The tests should be ..."."""
    if len(question) > MAX_RULE_CHARS or _looks_like_output(question):
        return None
    match = _WHY_NOT_WE.match(question)
    if match and not _too_thin(match.group("what")):
        what = match.group("what").strip()
        first = what.split()[0].lower()
        said = f"prefer {what}" if first.endswith("ing") else what
        return _make(standalone(said), "preference", 0.7, "rule", verb_subject(what))
    match = _COULD_NOT.match(question)
    if match and not _too_thin(match.group("rest")):
        rest = match.group("rest").strip()
        said = rest if match.group("person") else f"{match.group('subject')} should {rest}"
        return _make(standalone(said), "preference", 0.7, "rule", clause_subject(said))
    return None


_USE_NOT = re.compile(
    r"^(?:please\s+)?use\s+(?P<right>[^,;]{1,60}?),?\s+(?:and\s+)?not\s+(?P<wrong>[^,;]{1,60}?)[.!]*$",
    re.IGNORECASE,
)


def _not_but(text: str) -> Candidate | None:
    match = _USE_NOT.match(text) or _NOT_BUT.match(text)
    if not match or _VAGUE_OBJECT.match(match.group("right")):
        return None
    right, wrong = match.group("right").strip(" ."), match.group("wrong").strip()
    said = f"use {right}, not {wrong}" if not re.match(r"^use\b", right, re.I) else right
    return _make(standalone(said), "preference", 0.75, "rule", verb_subject(right))


_TRAILING_NO = re.compile(
    r"(?:,|\band\b|\bor\b)\s+no\s+(?P<obj>[\w-]+(?:\s+[\w-]+){0,3})[.!]*$", re.I
)


def _negative_request(text: str) -> Candidate | None:
    match = _NEGATIVE_IMPERATIVE.match(text)
    if not match:
        trailing = _TRAILING_NO.search(text)  # "commit, push and open a PR, no co-author lines"
        if trailing and not _too_thin(trailing.group("obj")):
            said = f"no {trailing.group('obj')}"
            return _make(standalone(said), "procedural", 0.7, "rule", object_subject(said))
        return None
    obj, cue = match.group("obj").strip(), match.group("cue").lower()
    if _too_thin(obj) or _TASK_OBJECT.match(obj) or re.match(r"^(?:worries|problem|need)\b", obj):
        return None
    if cue == "no" and re.match(r"^(?:\w+\s+){0,3}(?:is|are|was|were|has|have)\b", obj):
        return None  # "no one is ..." states, it does not ask
    if cue == "no" and (len(obj.split()) > 4 or not re.search(r"s\W*$", obj)):
        return None  # "no co-author lines", "no emojis"; not "no relevance beyond tag matching"
    if cue == "stop" and re.match(r"^(?:for a|a sec|here|there|now)\b", obj, re.IGNORECASE):
        return None  # "stop for a second": a pause, not a rule
    said = text if cue != "dont" else "don't " + obj
    return _make(standalone(said), "procedural", 0.8, "rule", verb_subject(obj))


def _instead(text: str) -> Candidate | None:
    if not _INSTEAD.search(text) or _too_thin(text):
        return None
    if not _INSTEAD_OF.match(text) and not re.search(
        r"\b(?:use|let's|replace|prefer|go with|switch|should|want|like)\b", text, re.I
    ):
        return None
    said = re.sub(r"^(?:please|p\w{0,2}l\w{1,3}se)\s+", "", text, flags=re.IGNORECASE)
    return _make(standalone(said), "preference", 0.7, "rule", clause_subject(text))


# What makes a "should" standing rather than a step of today's task: when, how often, where,
# or what not to do ("before committing", "in dev", "not X").
_STANDING_QUALIFIER = re.compile(
    r"\b(?:before|after|whenever|every|each|always|never|ever|only|instead|rather|not|n't|"
    r"in (?:dev|prod|production|ci|tests?|staging)|by default)\b",
    re.IGNORECASE,
)
_MODAL = re.compile(r"\b(?:should|must|shall|has to|have to|needs? to|ought to)\b", re.IGNORECASE)


def _obligation(text: str) -> Candidate | None:
    if not _MODAL.search(text):
        return None
    if _STRONG_OBLIGATION.search(text):
        confidence = 0.8
    elif _OBLIGATION.search(text) or _STANDING_QUALIFIER.search(text):
        confidence = 0.6
    else:
        return None
    if confidence < 0.8 and len(text) > 160:
        return None  # a plain "should" in a long sentence is a task's detail
    return _make(standalone(text), "procedural", confidence, "rule", clause_subject(text))


_DID_NOT_WANT = re.compile(
    r"^(?:\w+[!.,]*\s+)?I\s+(?:didn't|did not|don't|do not)\s+want\s+(?:you\s+)?to\s+"
    r"(?P<what>\w+\s+.+)",
    re.IGNORECASE,
)
_INSTEAD_OF = re.compile(r"^instead of\s+(?P<wrong>[^,]+),\s*(?P<right>\w+\b.+)", re.IGNORECASE)


def _unwanted(text: str) -> Candidate | None:
    """ "woah, I didn't want to delete .git/hooks/x" -> do not delete .git/hooks/x unasked."""
    match = _DID_NOT_WANT.match(text)
    if not match or _too_thin(match.group("what")):
        return None
    what = match.group("what").strip(" .!")
    said = f"do not {what} without being asked (the user did not want it)"
    return _make(finish_sentence(said), "preference", 0.75, "rule", verb_subject(what))


def _want(text: str) -> Candidate | None:
    match = _WANT.match(text)
    if not match or _too_thin(match.group("obj")):
        return None
    return _make(
        standalone(text), "preference", 0.7, "preference", object_subject(match.group("obj"))
    )


def _workflow_request(text: str) -> Candidate | None:
    match = _WORKFLOW_IMPERATIVE.match(text)
    if not match or not _STANDING_HINT.search(text) or _TASK_OBJECT.match(match.group("obj")):
        return None
    said = re.sub(r"^(?:please|p\w{0,2}l\w{1,3}se)\s+", "", text, flags=re.IGNORECASE)
    return _make(standalone(said), "procedural", 0.7, "rule", verb_subject(match.group("obj")))


def _base_form(gerund_phrase: str) -> str:
    """ "writing TypeScript" -> "write TypeScript" (the first word only; good enough)."""
    words = gerund_phrase.split(None, 1)
    if not words:
        return gerund_phrase
    word = words[0]
    lower = word.lower()
    if lower.endswith("ing") and len(lower) > 4:
        stem = word[:-3]
        if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
            stem = stem[:-1]  # running -> run
        elif stem.lower().endswith(("at", "it", "ur", "iv", "ak", "us", "ok", "ar")) and not (
            stem.lower().endswith(("ook", "eat"))
        ):
            stem += "e"  # writing -> write, using -> use
        word = stem
    return " ".join([word] + words[1:])


def finish_sentence(text: str) -> str:
    from memctl.core.learning.phrasing import finish

    return finish(text)


# --- relative days, resolved against when the turn was said ---------------------------------

_RELATIVE_DAYS = (
    (re.compile(r"\b(?:earlier\s+)?today\b", re.IGNORECASE), 0, "on {date}"),
    (re.compile(r"\byesterday\b", re.IGNORECASE), -1, "on {date}"),
    (re.compile(r"\btomorrow\b", re.IGNORECASE), 1, "on {date}"),
    (re.compile(r"\blast week\b", re.IGNORECASE), -7, "in the week of {date}"),
    (re.compile(r"\bnext week\b", re.IGNORECASE), 7, "in the week of {date}"),
    (re.compile(r"\b(?:昨天)"), -1, "{date}"),
    (re.compile(r"\b(?:今天)"), 0, "{date}"),
    (re.compile(r"(?:上周)"), -7, "{date}那周"),
)


def dated(text: str, timestamp: str | None) -> str:
    """`text` with "yesterday", "last week", ... written as dates, counted from `timestamp`
    (when the turn was said); unchanged without one. A memory is read weeks later."""
    if not timestamp:
        return text
    from datetime import timedelta

    from memctl.core.files.memory import parse_time

    when = parse_time(timestamp)
    if when is None:
        return text
    for pattern, days, form in _RELATIVE_DAYS:
        if pattern.search(text):
            day = when + timedelta(days=days)
            if "week" in form or "周" in form:
                day -= timedelta(days=day.weekday())  # the Monday of that week
            text = pattern.sub(form.format(date=day.strftime("%Y-%m-%d")), text)
    return text
