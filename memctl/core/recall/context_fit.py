"""Fit context sections into a token budget: lower-value parts shrink first, and it says so.

Each part comes with renderings from fullest to smallest (an empty string means left out).
While the text is over budget, a section using more than its share of the budget shrinks
first; once every section is within its share, the lowest-value part anywhere shrinks. The
last resort clips the text itself, so the result is always within budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Count = Callable[[str], int]


@dataclass
class Part:
    section: str
    levels: list[str]  # fullest first; "" = left out
    value: float  # lower shrinks first
    kind: str  # what the note calls it: "turn", "memory", ...
    group: str = ""  # optional `###` heading inside the section
    level: int = 0
    key: str = ""

    @property
    def text(self) -> str:
        return self.levels[self.level]

    @property
    def can_shrink(self) -> bool:
        return self.level < len(self.levels) - 1


@dataclass
class Fitted:
    text: str
    tokens: int
    left_out: dict[str, int] = field(default_factory=dict)
    shortened: dict[str, int] = field(default_factory=dict)
    clipped: bool = False


def plural(kind: str, n: int) -> str:
    if n == 1:
        return f"1 {kind}"
    return f"{n} {kind[:-1] + 'ies' if kind.endswith('y') and kind[-2:] != 'ey' else kind + 's'}"


def budget_note(
    left_out: dict[str, int], shortened: dict[str, int], budget: int, clipped: bool = False
) -> str:
    bits = []
    if left_out:
        bits.append("left out " + ", ".join(plural(k, n) for k, n in left_out.items()))
    if shortened:
        bits.append("shortened " + ", ".join(plural(k, n) for k, n in shortened.items()))
    if clipped:
        bits.append("cut the text at the end")
    if not bits:
        return ""
    return f"_To fit {budget} tokens: {'; '.join(bits)}._"


def render(
    title: str, sections: Sequence[tuple[str, str]], parts: Sequence[Part], note: str
) -> str:
    """One `## heading` per section with text (`### group` inside), then the note: the same
    heading levels as every other block memctl hands an agent, so blocks joined into one
    injection read as one document. `title` heads the block only when no section has text."""
    blocks: list[str] = []
    for name, heading in sections:
        lines: list[str] = []
        group = None
        for part in parts:
            if part.section != name or not part.text:
                continue
            if part.group and part.group != group:
                if lines:
                    lines.append("")
                lines.append(f"### {part.group}")
            group = part.group
            lines.append(part.text)
        if lines:
            blocks.append(f"## {heading}\n\n" + "\n".join(lines))
    if note:
        blocks.append(note)
    if not any(block.startswith("## ") for block in blocks):
        blocks.insert(0, f"## {title}")
    return "\n\n".join(blocks) + "\n"


def _tally(parts: Sequence[Part]) -> tuple[dict[str, int], dict[str, int]]:
    left_out: dict[str, int] = {}
    shortened: dict[str, int] = {}
    for part in parts:
        if part.level == 0:
            continue
        target = left_out if not part.text else shortened
        target[part.kind] = target.get(part.kind, 0) + 1
    return left_out, shortened


def fit(
    title: str,
    sections: Sequence[tuple[str, str]],
    parts: list[Part],
    budget: int,
    shares: dict[str, float],
    count: Count,
    empty_text: str = "",
) -> Fitted:
    order = sorted(range(len(parts)), key=lambda i: (parts[i].value, i))
    cache: dict[str, int] = {}

    def count_cached(value: str) -> int:
        if value not in cache:
            cache[value] = count(value)
        return cache[value]

    def current() -> tuple[str, int]:
        left_out, shortened = _tally(parts)
        text = render(title, sections, parts, budget_note(left_out, shortened, budget))
        return text, count(text)

    def section_tokens(name: str) -> int:
        return sum(count_cached(p.text) for p in parts if p.section == name and p.text)

    text, tokens = current()
    while tokens > budget:
        over = {
            name for name, _ in sections if section_tokens(name) > shares.get(name, 1.0) * budget
        }
        pick = next((i for i in order if parts[i].can_shrink and parts[i].section in over), None)
        if pick is None:
            pick = next((i for i in order if parts[i].can_shrink), None)
        if pick is None:
            break
        parts[pick].level += 1
        text, tokens = current()
    left_out, shortened = _tally(parts)
    clipped = False
    if tokens > budget:
        text, clipped = clip_to_budget(text, budget, count, left_out, shortened), True
        tokens = count(text)
    if not any(p.text for p in parts) and empty_text:
        text = f"## {title}\n\n{empty_text}\n"
        tokens = count(text)
    return Fitted(text, tokens, left_out, shortened, clipped)


def clip_to_budget(
    text: str, budget: int, count: Count, left_out: dict[str, int], shortened: dict[str, int]
) -> str:
    """Whole lines from the top while they fit, then the note; characters as a last resort."""
    note = budget_note(left_out, shortened, budget, clipped=True)
    reserve = count(note) + 2
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith("_To fit "):
            continue
        candidate = "\n".join(kept + [line])
        if count(candidate) + reserve > budget:
            break
        kept.append(line)
    body = "\n".join(kept).rstrip()
    out = f"{body}\n\n{note}\n" if body else f"{note}\n"
    while count(out) > budget and out:
        out = out[: max(0, len(out) - max(1, len(out) // 10))]
    return out
