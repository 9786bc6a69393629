"""Typed errors raised by the library; the CLI translates them once (cli/output.py)."""

from __future__ import annotations

from pathlib import Path


class MemctlError(Exception):
    """A runtime failure the user can act on. Exit code 1."""

    exit_code = 1
    kind = "error"


class UsageError(MemctlError):
    """A bad option value or argument. Exit code 2."""

    exit_code = 2
    kind = "usage"


class StoreNotFound(MemctlError):
    kind = "store_not_found"


class MemoryNotFound(MemctlError):
    kind = "not_found"

    def __init__(self, memory_id: str):
        super().__init__(f"No memory with id '{memory_id}'.")
        self.memory_id = memory_id


class ModelUnavailable(MemctlError):
    kind = "model_unavailable"


class InvalidMemoryFile(MemctlError):
    """A memory file that cannot be read: reported as `path:line: what is wrong`."""

    kind = "invalid_file"

    def __init__(self, path: Path | str, line: int, problem: str):
        self.path = str(path)
        self.line = line
        self.problem = problem
        super().__init__(f"{self.path}:{line}: {problem}")

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "problem": self.problem}


class LowValueContent(MemctlError):
    """Text not worth remembering (small talk, a scrap, a bare stack trace). Exit code 3."""

    exit_code = 3
    kind = "low_value"

    def __init__(self, reason: str):
        super().__init__(f"Refused: {reason}")
        self.reason = reason


class InvalidConfig(InvalidMemoryFile, UsageError):
    """A config.yaml value of the wrong type or out of range: `config.yaml:LINE: what is wrong`.

    A usage error by nature (a bad setting, like a bad option), but exit code 1 like every
    file memctl cannot read."""

    exit_code = 1
    kind = "invalid_config"


class OutsideStore(MemctlError):
    """A write that would land outside the store through a symlinked folder: refused."""

    kind = "outside_store"

    def __init__(self, path: Path | str, target: Path | str):
        self.path = str(path)
        super().__init__(
            f"{path}: refused to write: a symlinked folder leads outside the store (to {target}); "
            "make it a real folder inside the store"
        )


class StorageFull(MemctlError):
    """A write the disk refused: no space left, the file-size limit, the disk quota."""

    kind = "storage_full"

    def __init__(self, limit: str, path: str | None = None):
        self.limit, self.path = limit, path
        where = f"could not write {path}: " if path else ""
        super().__init__(
            f"{where}{limit}. Free some room (or raise the limit) and run the command again."
        )
