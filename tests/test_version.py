"""`memctl --version` names the release pyproject.toml declares, and costs no heavy import."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from memctl.cli.app import app
from memctl.cli.version import FALLBACK_VERSION

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = (REPO / "pyproject.toml").read_text(encoding="utf-8")
DECLARED = re.search(r'^version = "([^"]+)"$', PYPROJECT, re.MULTILINE).group(1)

PROBE = """
import atexit, sys
atexit.register(lambda: print(sorted(m for m in ("typer", "rich", "lancedb", "yaml") if m in sys.modules), file=sys.stderr))
sys.argv = ["memctl", "--version"]
from memctl.cli.app import main
main()
"""


def test_the_fallback_constant_is_the_declared_version():
    assert FALLBACK_VERSION == DECLARED


def test_version_prints_the_installed_release_without_loading_the_cli():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"memctl {DECLARED}\n", (
        "installed metadata differs from pyproject.toml: re-run `pip install -e .`"
    )
    assert done.stderr.strip() == "[]"  # neither typer, rich, yaml nor LanceDB was imported


def test_version_after_a_global_option_goes_through_the_cli():
    result = CliRunner().invoke(app, ["--store", "/nonexistent", "--version"])
    assert result.exit_code == 0
    assert result.stdout == f"memctl {DECLARED}\n"
