"""Forgetting as a feature: hotness, the hybrid forget score, and the decay plan.

Pure: plain values in, decisions out. The seeds' hybrid model scores how forgettable a memory is:
0.4 x age (capped at the horizon) + 0.35 x (1 - importance) + 0.25 x (1 - hotness).

Time counts only while a memory could have been recalled. Its age and coldness run from when
it came into this store or was last changed (`entered`: its `updated`, when later than its
`created`; never the file's time, which a clone or checkout resets) up to the store's latest
activity (its latest recall, or its newest memory), not up to the calendar date: the time the
store sat idle is left out. Why: a memory is forgettable when the store was used and it was not. 1,000 notes
imported today with their own dates from 2023 have had no chance to be recalled yet, so none
"would be archived now"; a store left alone for a year gave no memory a chance either, so
coming back to it must not find everything archived. Expiry (`expires`) is a date the user
chose and is checked against the real date.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from memctl.core.errors import UsageError

DAY_SECONDS = 86400.0
WEIGHT_NAMES = ("age", "importance", "hotness")

KEEP = "keep"
ARCHIVE = "archive"
# Reasons a decision carries: why it is archived, or why it is kept.
EXPIRED, SCORE, CAPACITY = "expired", "score", "capacity"
PINNED, TOO_YOUNG, BELOW_THRESHOLD = "pinned", "min_age", "below_threshold"


@dataclass(frozen=True)
class DecayInput:
    id: str
    title: str
    type: str
    created: datetime | None
    importance: float
    pinned: bool = False
    expires: datetime | None = None
    access_count: int = 0
    last_access: datetime | None = None
    entered: datetime | None = None  # when this store got it or last changed it; None: `created`

    @property
    def since(self) -> datetime | None:
        """Where its age starts: when it came into this store, never before its `created`."""
        known = [t for t in (self.created, self.entered) if t is not None]
        return max(known) if known else None


def store_clock(items: list[DecayInput], now: datetime) -> datetime:
    """The store's latest activity (a recall, or the newest memory's arrival), at most `now`:
    the time up to which ages and coldness are counted (see the module docstring)."""
    moments = [t for i in items for t in (i.last_access, i.since) if t is not None]
    return min(max(moments), now) if moments else now


@dataclass(frozen=True)
class DecayDecision:
    id: str
    title: str
    type: str
    age_days: float
    importance: float
    hotness: float
    score: float
    action: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DecaySettings:
    weights: tuple[float, float, float] = (0.4, 0.35, 0.25)
    horizon_days: float = 90.0
    hotness_window_days: float = 30.0
    hotness_saturation: int = 20
    hotness_recency_weight: float = 0.6
    min_age_days: float = 7.0
    threshold: float = 0.6
    max_memories: int | None = 10000

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> DecaySettings:
        """Read the `decay:` section of config.yaml; a bad value names its key."""
        section = section or {}
        base = cls()

        def number(key: str, positive: bool = False) -> float:
            return _number(section, key, getattr(base, key), positive)

        def fraction(key: str) -> float:
            return _fraction(section, key, getattr(base, key))

        cap = section.get("max_memories", base.max_memories)
        return cls(
            weights=_weights(
                section.get("weights", dict(zip(WEIGHT_NAMES, base.weights, strict=False)))
            ),
            horizon_days=number("horizon_days", positive=True),
            hotness_window_days=number("hotness_window_days", positive=True),
            hotness_saturation=int(number("hotness_saturation", positive=True)),
            hotness_recency_weight=fraction("hotness_recency_weight"),
            min_age_days=number("min_age_days"),
            threshold=fraction("threshold"),
            max_memories=None if cap is None else int(number("max_memories")),
        )


def hotness(
    access_count: int,
    last_access: datetime | None,
    now: datetime,
    window_days: float = 30.0,
    saturation: int = 20,
    recency_weight: float = 0.6,
    created: datetime | None = None,
) -> float:
    """How alive a memory is, in [0, 1]: recency of the last access in the window, and frequency.

    Frequency saturates on a log scale (1 access ~0.23, 5 ~0.59, `saturation` or more = 1).
    A memory never accessed counts its creation as its last touch, so a new memory starts warm.
    """
    touched = last_access if last_access is not None else created
    if touched is None:
        recency = 0.0
    else:
        days_since = max(0.0, (now - touched).total_seconds() / DAY_SECONDS)
        recency = max(0.0, 1.0 - days_since / window_days)
    count = max(0, int(access_count))
    frequency = min(1.0, math.log1p(count) / math.log1p(max(1, saturation)))
    return _clamp(recency_weight * recency + (1.0 - recency_weight) * frequency)


def decay_score(
    age_days: float,
    importance: float,
    hotness: float,
    weights: tuple[float, float, float] = (0.4, 0.35, 0.25),
    horizon_days: float = 90.0,
) -> float:
    """Forget score: higher means more forgettable. In [0, 1] when the weights sum to 1."""
    age_part = min(max(age_days, 0.0) / horizon_days, 1.0)
    w_age, w_importance, w_hotness = weights
    return (
        w_age * age_part
        + w_importance * (1.0 - _clamp(importance))
        + w_hotness * (1.0 - _clamp(hotness))
    )


def recency_bonus(age_days: float, max_bonus: float, half_life_days: float) -> float:
    """Bounded additive bonus for recall ranking, in [0, max_bonus]: halves every half-life.

    Added to a relevance score, never multiplied: an old relevant memory keeps its relevance.
    """
    if max_bonus <= 0 or half_life_days <= 0:
        return 0.0
    return max_bonus * 0.5 ** (max(age_days, 0.0) / half_life_days)


def plan_decay(
    items: list[DecayInput], now: datetime, config: Mapping[str, Any] | DecaySettings | None = None
) -> list[DecayDecision]:
    """Decide keep or archive for every memory. Most forgettable first; ties broken by id.

    Rules in order: pinned never decays; younger than min_age is untouched; past `expires`
    is archived; score >= threshold is archived; then, while more than max_memories remain,
    the remaining eligible memories with the highest scores are archived.
    """
    settings = config if isinstance(config, DecaySettings) else DecaySettings.from_config(config)
    decisions: dict[str, DecayDecision] = {}
    evictable: list[DecayDecision] = []
    clock = store_clock(items, now)
    for item in sorted(items, key=lambda i: i.id):
        age = _age_days(item.since, clock)
        heat = hotness(
            item.access_count,
            item.last_access,
            clock,
            settings.hotness_window_days,
            settings.hotness_saturation,
            settings.hotness_recency_weight,
            item.since,
        )
        score = decay_score(age, item.importance, heat, settings.weights, settings.horizon_days)
        if item.pinned:
            action, reason = KEEP, PINNED
        elif age < settings.min_age_days:
            action, reason = KEEP, TOO_YOUNG
        elif item.expires is not None and item.expires <= now:
            action, reason = ARCHIVE, EXPIRED
        elif score >= settings.threshold:
            action, reason = ARCHIVE, SCORE
        else:
            action, reason = KEEP, BELOW_THRESHOLD
        decision = DecayDecision(
            item.id,
            item.title,
            item.type,
            round(age, 2),
            _clamp(item.importance),
            round(heat, 4),
            round(score, 4),
            action,
            reason,
        )
        decisions[item.id] = decision
        if reason == BELOW_THRESHOLD:
            evictable.append(decision)

    if settings.max_memories is not None:
        kept = sum(1 for d in decisions.values() if d.action == KEEP)
        excess = kept - settings.max_memories
        if excess > 0:
            evictable.sort(key=lambda d: (-d.score, -d.age_days, d.id))
            for decision in evictable[:excess]:
                decisions[decision.id] = _replace_action(decision, ARCHIVE, CAPACITY)

    return sorted(decisions.values(), key=lambda d: (d.action != ARCHIVE, -d.score, d.id))


def _replace_action(decision: DecayDecision, action: str, reason: str) -> DecayDecision:
    return DecayDecision(**{**asdict(decision), "action": action, "reason": reason})


def _age_days(created: datetime | None, now: datetime) -> float:
    """Age in days; a memory without a creation time counts as new: never forgotten blindly."""
    if created is None:
        return 0.0
    return max(0.0, (now - created).total_seconds() / DAY_SECONDS)


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _number(
    section: Mapping[str, Any],
    key: str,
    default: float,
    positive: bool = False,
    prefix: str = "decay",
) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise UsageError(f"config {prefix}.{key} must be a number, got {value!r}.")
    if value < 0 or (positive and value == 0):
        bound = "above" if positive else "at least"
        raise UsageError(f"config {prefix}.{key} must be {bound} 0, got {value!r}.")
    return float(value)


def _fraction(section: Mapping[str, Any], key: str, default: float) -> float:
    value = _number(section, key, default)
    if value > 1:
        raise UsageError(f"config decay.{key} must be between 0 and 1, got {value!r}.")
    return value


def _weights(value: Any) -> tuple[float, float, float]:
    """Weights as a mapping {age, importance, hotness} (missing ones default) or a list of three."""
    defaults = dict(zip(WEIGHT_NAMES, DecaySettings().weights, strict=False))
    if isinstance(value, (list, tuple)) and len(value) == 3:
        value = dict(zip(WEIGHT_NAMES, value, strict=False))
    if not isinstance(value, Mapping):
        raise UsageError(
            f"config decay.weights must map {list(WEIGHT_NAMES)} to numbers, got {value!r}."
        )
    unknown = sorted(set(value) - set(WEIGHT_NAMES))
    if unknown:
        raise UsageError(
            f"config decay.weights has unknown keys {unknown}; use {list(WEIGHT_NAMES)}."
        )
    age, importance, heat = (
        _number(value, name, defaults[name], prefix="decay.weights") for name in WEIGHT_NAMES
    )
    return age, importance, heat
