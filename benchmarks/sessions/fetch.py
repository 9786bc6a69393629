"""Fetch the sessions that are not in the repository into the cache, and check every transcript.

`python -m benchmarks.sessions.fetch` downloads each session whose license keeps it out of the
repository from the raw file at the recorded commit, verifies its sha256 and writes it to the cache
(`$MEMCTL_BENCH_SESSIONS_CACHE`, else `~/.cache/memctl-bench/sessions`). `--from DIR` takes copies
from a folder laid out as DIR/<project>/<session>.jsonl instead (no network); `--mirror DIR` reads
them from local git mirrors DIR/<owner>+<name>/repo by blob id. `--check` rebuilds every
transcript, committed or fetched, in a temporary folder and verifies every hash; exit 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from benchmarks.sessions.corpus import (
    Session,
    cache_dir,
    cached_copy,
    committed_copy,
    digest,
    load_sessions,
)


def _download(session: Session) -> bytes:
    with urllib.request.urlopen(session.raw_url, timeout=60) as answer:  # noqa: S310 - fixed https URL
        return answer.read()


def _from_mirror(session: Session, mirror: Path) -> bytes:
    repo = mirror / session.repository.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "-C", str(repo), "cat-file", "blob", session.git_blob],
        capture_output=True,
        check=True,
    ).stdout


def obtain(session: Session, source: Path | None, mirror: Path | None) -> bytes:
    """The transcript's bytes: committed copy, a local folder, a mirror, or the network."""
    if session.committed:
        return gzip.decompress(committed_copy(session).read_bytes())
    if source is not None:
        return (source / session.project / f"{session.name}.jsonl").read_bytes()
    if mirror is not None:
        return _from_mirror(session, mirror)
    return _download(session)


def fetch(sessions: list[Session], cache: Path, source: Path | None, mirror: Path | None) -> int:
    problems = 0
    for session in sessions:
        if session.committed:
            continue
        target = cached_copy(session, cache)
        if target.is_file() and digest(target.read_bytes()) == session.sha256:
            print(f"cached   {session.id}")
            continue
        try:
            raw = obtain(session, source, mirror)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"FAILED   {session.id}: {exc}", file=sys.stderr)
            problems += 1
            continue
        if digest(raw) != session.sha256:
            print(f"MISMATCH {session.id}: sha256 differs from the manifest", file=sys.stderr)
            problems += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(raw)
        tmp.replace(target)
        print(f"fetched  {session.id} ({len(raw):,} bytes)")
    return problems


def check(sessions: list[Session], cache: Path, source: Path | None, mirror: Path | None) -> int:
    """Rebuild every transcript from its source into a temp folder; count hash mismatches."""
    problems = 0
    with tempfile.TemporaryDirectory(prefix="memctl-sessions-check-") as scratch:
        for session in sessions:
            try:
                if session.committed or source or mirror:
                    raw = obtain(session, source, mirror)
                else:
                    cached = cached_copy(session, cache)
                    raw = cached.read_bytes() if cached.is_file() else _download(session)
            except (OSError, subprocess.CalledProcessError) as exc:
                print(f"MISSING  {session.id}: {exc}", file=sys.stderr)
                problems += 1
                continue
            rebuilt = Path(scratch) / f"{session.project}__{session.name}.jsonl"
            rebuilt.write_bytes(raw)
            if digest(rebuilt.read_bytes()) != session.sha256:
                print(f"MISMATCH {session.id}", file=sys.stderr)
                problems += 1
    total = len(sessions)
    print(f"{total - problems} of {total} transcripts match the manifest")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sessions.fetch", description=__doc__
    )
    parser.add_argument(
        "--check", action="store_true", help="rebuild all transcripts and verify hashes"
    )
    parser.add_argument(
        "--from", dest="source", metavar="DIR", help="copy from DIR/<project>/<session>.jsonl"
    )
    parser.add_argument(
        "--mirror", metavar="DIR", help="read from git mirrors DIR/<owner>+<name>/repo"
    )
    parser.add_argument("--cache", metavar="DIR", help="cache folder (default: see above)")
    args = parser.parse_args(argv)
    cache = Path(args.cache) if args.cache else cache_dir()
    source = Path(args.source) if args.source else None
    mirror = Path(args.mirror) if args.mirror else None
    sessions = load_sessions()
    if args.check:
        return 1 if check(sessions, cache, source, mirror) else 0
    return 1 if fetch(sessions, cache, source, mirror) else 0


if __name__ == "__main__":
    raise SystemExit(main())
