"""Dev and test halves of every benchmark: tune on `dev`, report `test`.

The splits are fixed here, so every run and every helper means the same halves:
- LoCoMo: conversations 1-5 are dev, 6-10 test (whole conversations, so no store is in both).
- MemoryBank: users 1-8 of each language are dev, 9-15 test (whole users).
- small store and multilingual: one store each, so their queries alternate: the 1st, 3rd,
  5th ... query is dev, the 2nd, 4th ... test (each group and kind is split evenly).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TypeVar

Item = TypeVar("Item")
HALVES = ("dev", "test")
LOCOMO_DEV = 5  # conversations 1-5
MEMORYBANK_DEV = 8  # users 1-8 of each language


def add_half_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--half",
        choices=HALVES,
        default=None,
        help="only the dev or the test half (benchmarks/halves.py); default: everything",
    )


def leading(items: Sequence[Item], dev_size: int, half: str | None) -> list[Item]:
    """The first `dev_size` items are dev, the rest test."""
    if half is None:
        return list(items)
    return list(items[:dev_size]) if half == "dev" else list(items[dev_size:])


def alternating(items: Sequence[Item], half: str | None) -> list[Item]:
    """Even positions (0, 2, ...) are dev, odd ones test."""
    if half is None:
        return list(items)
    return [item for n, item in enumerate(items) if (n % 2 == 0) == (half == "dev")]
