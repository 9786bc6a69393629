"""onnxruntime with its telemetry off, so that embedding never touches the network.

onnxruntime 1.2x ships Microsoft's 1DS telemetry on Linux too: a process that loads a model
looks up `mobile.events.data.microsoft.com` (seen under strace on `memctl add` and `extract`).
`disable_telemetry_events()` alone does not stop it; `ORT_DISABLE_TELEMETRY=1` does, but only
when it is set before the native library is loaded. Every import of onnxruntime in memctl (and
of fastembed, which imports it) goes through here first.
"""

from __future__ import annotations

import os


def quiet_onnxruntime():
    """The onnxruntime module, imported with telemetry off (before any session exists)."""
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # Why: read once, when the native library loads
    import onnxruntime

    onnxruntime.disable_telemetry_events()
    return onnxruntime
