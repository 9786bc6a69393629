"""One SessionEnd ingest in its own process, reporting its time and peak memory.

Run as `python -m benchmarks.sessions.ingest_one STORE TRANSCRIPT SESSION_ID CWD`. It builds the
SessionEnd payload Claude Code sends, opens the store the way `memctl hook claude-code session-end
--store-only` does, and runs the hook's SessionEnd handler (`capture_transcript`, final=True) here
and now: the work the hook's detached `memctl hook ingest` process does, without a hook budget.
Prints one JSON object: seconds, peak_rss_mb, the ingest's outcome and any hook-log lines.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import traceback
from pathlib import Path


def payload_text(session_id: str, transcript: Path, cwd: str) -> str:
    return json.dumps(
        {
            "hook_event_name": "SessionEnd",
            "session_id": session_id,
            "transcript_path": str(transcript),
            "cwd": cwd,
            "reason": "prompt_input_exit",
            "permission_mode": "default",
        }
    )


def ingest(store_dir: Path, transcript: Path, session_id: str, cwd: str) -> dict:
    from memctl.agents.claude_code import normalize_payload
    from memctl.agents.claude_code_events import capture_transcript, find_hook_store, log_path
    from memctl.config import read_environment

    started = time.perf_counter()
    outcome = "ok"
    detail = ""
    payload = normalize_payload(payload_text(session_id, transcript, cwd), "SessionEnd")
    store = find_hook_store(payload.cwd, str(store_dir), read_environment({}), Path(cwd))
    if store is None:
        raise SystemExit(f"no store at {store_dir}")
    try:
        capture_transcript(store, payload, final=True, spawn=None, user_store=None)
    except Exception:  # noqa: BLE001 - reported, the benchmark goes on with the next session
        outcome = "error"
        detail = traceback.format_exc()[-2000:]
    seconds = time.perf_counter() - started
    log = log_path(store)
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    usage = resource.getrusage(resource.RUSAGE_SELF)
    # Why the children too: work handed to a child process the ingest waited for counts.
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "seconds": round(seconds, 3),
        # Why: on a shared, loaded machine the CPU time is the steadier figure
        "cpu_seconds": round(
            usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime, 3
        ),
        "peak_rss_mb": round(max(usage.ru_maxrss, children.ru_maxrss) / scale, 1),
        "outcome": outcome,
        "detail": detail,
        "hook_log": log.read_text(encoding="utf-8", errors="replace")[-2000:]
        if log.exists()
        else "",
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    store_dir, transcript, session_id, cwd = args
    print(json.dumps(ingest(Path(store_dir), Path(transcript), session_id, cwd)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
