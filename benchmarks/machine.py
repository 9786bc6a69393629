"""What machine a benchmark ran on, and small measuring tools shared by the benchmarks."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import sys
from importlib import metadata


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_total_gb() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    try:
        usable_cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        usable_cpus = os.cpu_count()
    return {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu_model": _cpu_model(),
        "cpus_usable": usable_cpus,
        "memory_total_gb": _memory_total_gb(),
        "packages": {
            name: _version(name) for name in ("memctl", "lancedb", "fastembed", "onnxruntime")
        },
    }


def peak_rss_mb() -> dict[str, float]:
    """Peak resident memory of this process (Linux reports KiB, macOS bytes)."""
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return {
        "peak_rss_self_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale, 1)
    }


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank-with-interpolation percentile (pct in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * pct / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize_seconds(values: list[float]) -> dict[str, float]:
    """p50/p95/mean of durations given in seconds, reported in milliseconds."""
    if not values:
        return {}
    return {
        "p50_ms": round(percentile(values, 50) * 1000, 2),
        "p95_ms": round(percentile(values, 95) * 1000, 2),
        "mean_ms": round(statistics.fmean(values) * 1000, 2),
        "count": len(values),
    }
