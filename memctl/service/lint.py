"""`memctl index --strict`: every file problem and every leniently read value, for CI."""

from __future__ import annotations

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile
from memctl.store.files import max_file_bytes, read_memory, scan_files


def strict_findings(store: Store) -> list[dict]:
    """{path, line, problem} for each file that cannot be read and each value read leniently
    (see core.files.lenient), archived files included, in path order."""
    found: list[dict] = []
    limit = max_file_bytes(store)
    for relpath in sorted(scan_files(store.root, include_archived=True)):
        path = store.root / relpath
        try:
            memory = read_memory(store.root, relpath, max_bytes=limit)
        except InvalidMemoryFile as exc:
            found.append(exc.to_dict())
            continue
        except OSError as exc:
            found.append({"path": str(path), "line": 0, "problem": f"unreadable: {exc}"})
            continue
        found += [{"path": str(path), "line": n, "problem": p} for n, p in memory.warnings]
    return found
