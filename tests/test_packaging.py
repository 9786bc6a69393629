"""memctl as users install it: sdist -> wheel -> a fresh venv, run from outside the checkout.

Built offline: setuptools comes from the running environment (`--no-build-isolation`) and the
venv sees the running interpreter's site-packages for the dependencies, so nothing is downloaded.
The wheel itself goes into the venv, so `import memctl` there finds it before any editable install
of this checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import typer

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.model]


def run(*args, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def copy_sources(target: Path) -> Path:
    """The files a build reads (top-level files and the package), never build debris."""
    target.mkdir()
    for path in REPO.iterdir():
        if path.is_file() and not path.is_symlink():
            shutil.copy2(path, target / path.name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "memctl", target / "memctl", ignore=ignore)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built the way pip and pipx build one from an sdist."""
    work = tmp_path_factory.mktemp("build")
    sources = copy_sources(work / "checkout")
    build_sdist = "import setuptools.build_meta as b, sys; print(b.build_sdist(sys.argv[1]))"
    name = run(sys.executable, "-c", build_sdist, work / "sdist", cwd=sources).split()[-1]
    sdist = work / "sdist" / name
    with tarfile.open(sdist) as archive:
        assert any(n.endswith("/memctl/templates/config.yaml") for n in archive.getnames())
    run(
        sys.executable, "-m", "pip", "wheel", sdist, "--no-deps", "--no-build-isolation",
        "--no-cache-dir", "--quiet", "--wheel-dir", work / "dist", cwd=work,
    )  # fmt: skip
    return next((work / "dist").glob("memctl-*.whl"))


def test_the_wheel_holds_the_templates_and_the_tokenizer(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = {p.name for p in (REPO / "templates").iterdir()}
    assert {f"memctl/templates/{name}" for name in templates} <= names
    tokenizer = {p.name for p in (REPO / "memctl" / "data" / "tokenizer").iterdir()}
    assert {f"memctl/data/tokenizer/{name}" for name in tokenizer} <= names
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in names)


def running_site_packages() -> list[str]:
    """Where this interpreter finds its dependencies: a venv's own site-packages (and its base's
    when it was made with --system-site-packages), a pipx venv's, or a plain interpreter's."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def make_venv_seeing_our_packages(venv: Path, cwd: Path) -> Path:
    """A fresh venv that sees the running interpreter's packages.

    Why not `venv --system-site-packages`: from inside a venv that flag exposes the *base*
    interpreter's site-packages, not the venv's, so the dependencies installed in the venv that
    runs the tests are missing (`No module named 'typer'`). A `.pth` file with the running
    interpreter's site-packages works from a venv, a plain interpreter and pipx alike; its plain
    path lines do not run those folders' own `.pth` files, so an editable install of this
    checkout stays out of sight.
    """
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=cwd)
    python = venv / "bin" / "python"
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=cwd)
    lines = "".join(f"{d}\n" for d in running_site_packages())
    (Path(purelib.strip()) / "_memctl_test_deps.pth").write_text(lines, encoding="utf-8")
    return python


def test_an_installed_wheel_inits_adds_and_recalls(wheel, tmp_path):
    venv = tmp_path / "venv"
    python = make_venv_seeing_our_packages(venv, tmp_path)
    run(
        sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        "--quiet", wheel, cwd=tmp_path,
    )  # fmt: skip

    project = tmp_path / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MEMCTL_"))}
    env["MEMCTL_NO_SERVER"] = "1"
    # The dependencies are the very ones the tests run with (from a venv, not its base's).
    found = run(python, "-c", "import typer; print(typer.__file__)", cwd=project, env=env)
    assert Path(found.strip()).resolve() == Path(typer.__file__).resolve()
    where = "import memctl, sysconfig; print(memctl.__file__); print(sysconfig.get_path('purelib'))"
    module_file, site_packages = run(python, "-c", where, cwd=project, env=env).split()
    assert Path(module_file).is_relative_to(site_packages) and venv in Path(module_file).parents
    assert REPO not in Path(module_file).resolve().parents

    memctl = venv / "bin" / "memctl"
    run(memctl, "init", cwd=project, env=env)
    written = (project / ".memory" / "config.yaml").read_bytes()
    assert written == (REPO / "templates" / "config.yaml").read_bytes()
    added = json.loads(
        run(memctl, "add", "We deploy with make release", "--json", cwd=project, env=env)
    )
    hits = json.loads(run(memctl, "recall", "how do we ship", "--json", cwd=project, env=env))
    assert [hit["id"] for hit in hits] == [added["id"]]
