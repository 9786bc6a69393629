"""`memctl --version`: the installed distribution's version, without importing typer or the index."""

from __future__ import annotations

# Why a constant too: a checkout run without being installed (PYTHONPATH=.) has no metadata.
# Keep it equal to pyproject.toml's version (tests/test_version.py checks).
FALLBACK_VERSION = "0.2.0"


def memctl_version() -> str:
    """The version pip recorded for memctl, else FALLBACK_VERSION."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - always there on Python >= 3.8
        return FALLBACK_VERSION
    try:
        return version("memctl")
    except PackageNotFoundError:
        return FALLBACK_VERSION


def version_line() -> str:
    return f"memctl {memctl_version()}"
