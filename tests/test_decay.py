import random
from datetime import datetime, timedelta, timezone

import pytest

from memctl.config import DEFAULTS
from memctl.core.errors import UsageError
from memctl.core.learning.decay import (
    DecayInput,
    DecaySettings,
    decay_score,
    hotness,
    plan_decay,
    recency_bonus,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def memory(mid: str, age: float, importance: float = 0.5, **fields) -> DecayInput:
    return DecayInput(
        id=mid,
        title=f"title {mid}",
        type="semantic",
        created=days_ago(age),
        importance=importance,
        **fields,
    )


def by_id(decisions):
    return {d.id: d for d in decisions}


def in_use(*items: DecayInput) -> list[DecayInput]:
    """These memories in a store that was in use until NOW (another memory recalled then)."""
    return [*items, memory("in-use", age=1, importance=1.0, access_count=1, last_access=NOW)]


def test_decay_score_follows_the_hybrid_formula():
    # 0.4 * 45/90 + 0.35 * (1 - 0.2) + 0.25 * (1 - 0.5)
    assert decay_score(45, 0.2, 0.5) == pytest.approx(0.2 + 0.28 + 0.125)
    assert decay_score(0, 1.0, 1.0) == pytest.approx(0.0)
    assert decay_score(90, 0.0, 0.0) == pytest.approx(1.0)


def test_age_counts_only_up_to_the_horizon():
    assert decay_score(400, 0.5, 0.5) == pytest.approx(decay_score(90, 0.5, 0.5))
    assert decay_score(30, 0.5, 0.5, horizon_days=30) == pytest.approx(decay_score(90, 0.5, 0.5))


def test_custom_weights_change_the_score():
    only_age = decay_score(45, 0.0, 0.0, weights=(1.0, 0.0, 0.0))
    assert only_age == pytest.approx(0.5)


def test_hotness_rises_with_recent_and_frequent_access():
    never = hotness(0, None, NOW)
    once_long_ago = hotness(1, days_ago(60), NOW)
    once_yesterday = hotness(1, days_ago(1), NOW)
    often_yesterday = hotness(15, days_ago(1), NOW)
    assert never == 0.0
    assert once_long_ago < once_yesterday < often_yesterday <= 1.0
    assert hotness(10_000, NOW, NOW) == pytest.approx(1.0)


def test_access_outside_the_window_keeps_only_frequency():
    stale = hotness(5, days_ago(31), NOW, window_days=30)
    assert stale == pytest.approx(hotness(5, days_ago(365), NOW, window_days=30))
    assert stale > hotness(1, days_ago(365), NOW, window_days=30)


def test_a_new_memory_never_accessed_starts_warm():
    day_old = hotness(0, None, NOW, created=days_ago(1))
    assert day_old > hotness(0, None, NOW, created=days_ago(29)) > 0
    assert hotness(0, None, NOW, created=days_ago(40)) == 0.0


def test_recency_bonus_is_bounded_and_halves_each_half_life():
    assert recency_bonus(0, 0.1, 14) == pytest.approx(0.1)
    assert recency_bonus(14, 0.1, 14) == pytest.approx(0.05)
    assert 0.0 <= recency_bonus(3650, 0.1, 14) < recency_bonus(30, 0.1, 14) < 0.1
    assert recency_bonus(-5, 0.1, 14) == pytest.approx(0.1)
    assert recency_bonus(10, 0.0, 14) == 0.0


def test_defaults_from_config_match_the_seed_model():
    settings = DecaySettings.from_config(DEFAULTS["decay"])
    assert settings.weights == (0.4, 0.35, 0.25)
    assert (settings.threshold, settings.min_age_days, settings.horizon_days) == (0.6, 7, 90)


def test_old_unimportant_cold_memory_is_archived_for_its_score():
    plan = plan_decay(in_use(memory("old", age=200, importance=0.1)), NOW, DEFAULTS["decay"])
    decision = by_id(plan)["old"]
    assert decision.action == "archive" and decision.reason == "score"
    assert decision.score >= 0.6


def test_important_or_hot_memories_are_kept():
    items = [
        memory("important", age=60, importance=1.0),
        memory("unimportant", age=60, importance=0.1),
        memory("hot", age=200, importance=0.5, access_count=30, last_access=days_ago(1)),
        memory("cold", age=200, importance=0.5, access_count=1, last_access=days_ago(150)),
    ]
    decisions = by_id(plan_decay(items, NOW, DEFAULTS["decay"]))
    assert decisions["important"].action == "keep"
    assert decisions["unimportant"].action == "archive"
    assert decisions["hot"].action == "keep"
    assert decisions["hot"].reason == "below_threshold"
    assert decisions["cold"].action == "archive"


def test_threshold_comes_from_config():
    item = memory("mid", age=60, importance=0.4)
    strict = by_id(plan_decay(in_use(item), NOW, {**DEFAULTS["decay"], "threshold": 0.95}))
    lax = by_id(plan_decay(in_use(item), NOW, {**DEFAULTS["decay"], "threshold": 0.3}))
    assert strict["mid"].action == "keep" and lax["mid"].action == "archive"


def test_pinned_never_decays():
    item = memory("pin", age=900, importance=0.0, pinned=True, expires=days_ago(100))
    decision = by_id(plan_decay(in_use(item), NOW, {**DEFAULTS["decay"], "max_memories": 0}))["pin"]
    assert decision.action == "keep" and decision.reason == "pinned"
    assert decision.score == pytest.approx(1.0)


def test_nothing_younger_than_min_age_is_touched():
    young = memory("young", age=3, importance=0.0, expires=days_ago(1))
    config = {**DEFAULTS["decay"], "threshold": 0.0, "max_memories": 0}
    decision = plan_decay([young], NOW, config)[0]
    assert decision.action == "keep" and decision.reason == "min_age"


def test_memory_without_creation_time_counts_as_new():
    undated = DecayInput(id="u", title="", type="semantic", created=None, importance=0.0)
    assert plan_decay([undated], NOW, DEFAULTS["decay"])[0].reason == "min_age"


def test_expired_memory_goes_even_when_important_and_hot():
    item = memory(
        "exp", age=20, importance=1.0, expires=days_ago(1), access_count=50, last_access=NOW
    )
    decision = plan_decay([item], NOW, DEFAULTS["decay"])[0]
    assert decision.action == "archive" and decision.reason == "expired"
    not_yet = memory("later", age=20, importance=1.0, expires=NOW + timedelta(days=1))
    assert plan_decay([not_yet], NOW, DEFAULTS["decay"])[0].action == "keep"


def test_capacity_cap_evicts_the_most_forgettable_eligible_memories():
    items = [memory(f"m{i}", age=10 + 10 * i, importance=0.9) for i in range(5)]
    items.append(memory("pinned", age=500, importance=0.0, pinned=True))
    items.append(memory("young", age=1, importance=0.0))
    config = {**DEFAULTS["decay"], "max_memories": 4}
    decisions = by_id(plan_decay(items, NOW, config))
    evicted = sorted(d.id for d in decisions.values() if d.action == "archive")
    # 7 memories, cap 4: three go, the oldest (highest-scoring) eligible ones.
    assert evicted == ["m2", "m3", "m4"]
    assert all(decisions[i].reason == "capacity" for i in evicted)
    assert decisions["pinned"].action == decisions["young"].action == "keep"


def test_capacity_counts_what_is_left_after_expiry_and_threshold():
    items = [
        memory("gone", age=300, importance=0.0),
        memory("a", age=20, importance=0.9),
        memory("b", age=30, importance=0.9),
    ]
    decisions = by_id(plan_decay(items, NOW, {**DEFAULTS["decay"], "max_memories": 2}))
    assert decisions["gone"].reason == "score"
    assert decisions["a"].action == decisions["b"].action == "keep"


def test_plan_is_deterministic_and_most_forgettable_first():
    items = [memory(f"m{i:02d}", age=5 + 13 * i % 200, importance=(i % 7) / 7) for i in range(40)]
    items += [memory("tie-b", age=100, importance=0.2), memory("tie-a", age=100, importance=0.2)]
    first = plan_decay(items, NOW, DEFAULTS["decay"])
    shuffled = items[:]
    random.Random(7).shuffle(shuffled)
    assert plan_decay(shuffled, NOW, DEFAULTS["decay"]) == first
    archived = [d for d in first if d.action == "archive"]
    assert first[: len(archived)] == archived
    assert [d.score for d in archived] == sorted((d.score for d in archived), reverse=True)
    ids = [d.id for d in first]
    assert ids.index("tie-a") < ids.index("tie-b")


def test_decision_carries_the_table_columns():
    decision = by_id(plan_decay(in_use(memory("x", age=40, importance=0.3)), NOW))["x"]
    row = decision.to_dict()
    assert set(row) == {
        "id",
        "title",
        "type",
        "age_days",
        "importance",
        "hotness",
        "score",
        "action",
        "reason",
    }
    assert row["age_days"] == pytest.approx(40)
    assert row["title"] == "title x"


@pytest.mark.parametrize(
    "section, key",
    [
        ({"threshold": "high"}, "decay.threshold"),
        ({"threshold": 1.5}, "decay.threshold"),
        ({"horizon_days": 0}, "decay.horizon_days"),
        ({"weights": {"age": 0.5, "speed": 0.1}}, "speed"),
        ({"weights": {"age": "x"}}, "decay.weights.age"),
    ],
)
def test_bad_config_values_name_their_key(section, key):
    with pytest.raises(UsageError, match=key.replace(".", r"\.")):
        plan_decay([memory("x", age=40)], NOW, {**DEFAULTS["decay"], **section})


def test_a_store_left_alone_does_not_forget_by_the_calendar():
    """13 memories of the last month, none recalled: a year later nothing more is forgettable
    than on the day the store was last used."""
    items = [memory(f"m{i:02d}", age=i * 2, importance=0.5) for i in range(13)]
    today = by_id(plan_decay(items, NOW, DEFAULTS["decay"]))
    a_year_later = by_id(plan_decay(items, NOW + timedelta(days=365), DEFAULTS["decay"]))
    assert [d.action for d in a_year_later.values()] == [d.action for d in today.values()]
    assert sum(d.action == "archive" for d in a_year_later.values()) < 13 // 2


def test_notes_imported_today_with_old_dates_are_new_here():
    """1,000 notes dated 2023, written into the store today, never recalled: none is stale."""
    entered = NOW - timedelta(hours=1)
    items = [
        DecayInput(
            id=f"n{i:04d}",
            title="",
            type="semantic",
            created=datetime(2023, 1, 1, tzinfo=timezone.utc) + timedelta(hours=8 * i),
            importance=0.5,
            entered=entered,
        )
        for i in range(1000)
    ]
    decisions = plan_decay(items, NOW, DEFAULTS["decay"])
    assert {d.reason for d in decisions} == {"min_age"}


def test_the_store_in_use_still_forgets_what_it_never_recalls():
    stale = memory("stale", age=120, importance=0.5)
    assert by_id(plan_decay(in_use(stale), NOW, DEFAULTS["decay"]))["stale"].action == "archive"
