"""What recall read from a memory's text, kept by a digest of that text.

A resident server sees the same candidates query after query; reading each again (its time,
whether it names a place) costs more than looking it up. Only a digest is kept, never the words:
a forgotten memory's text must not outlive it here.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class DigestCache(Generic[Value]):
    """A thread-safe LRU of at most `size` values, keyed by a digest of the texts they came from."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[bytes, Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, parts: tuple[str, ...], compute: Callable[[], Value]) -> Value:
        """The value for these texts, computed (outside the lock) the first time they are seen."""
        key = hashlib.blake2b("\x00".join(parts).encode(), digest_size=16).digest()
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            if len(self._values) > self._size:
                self._values.popitem(last=False)
        return value

    def items(self) -> list[tuple[bytes, Value]]:
        with self._lock:
            return list(self._values.items())

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
