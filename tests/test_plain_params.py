"""The CLI reads option values as typer does, without pydantic for the plain ones (cli.plain_params)."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from memctl.cli.app import app
from memctl.cli.plain_params import _UNSET, plain_value

typer_adapters = pytest.importorskip("typer._adapters")  # a typer that coerces through pydantic

VALUES = {
    str: ["deploy with make", "", " spaced ", "日本語", "-", "\udcff", 5, b"bytes"],
    int: ["5", "-3", "007", "0", "1_000", " 5", "5.0", "1e3", "+5", "abc", "", 7, True, 2.0],
    float: ["0.7", "1", "-0", "0.10", "1.", ".5", "1e-3", "inf", "nan", " 1", "1_0", "x", 3, 0.5],
    bool: [True, False, "true", "no", "", 1],
    list[str]: [(), [], ("a", "b"), ["a"], ("a", 1), ("\udcff",)],
}


def typers_answer(annotation, value):
    from typer.models import OptionInfo

    adapter = typer_adapters.try_build_adapter(annotation, OptionInfo())
    try:
        return adapter.validate_python(value)
    except Exception as error:  # noqa: BLE001 - a refusal is an answer too
        return type(error)


@pytest.mark.parametrize("annotation", list(VALUES), ids=str)
def test_plain_values_are_what_typer_makes_of_them(annotation):
    taken = 0
    for value in VALUES[annotation]:
        plain = plain_value(annotation, value)
        if plain is _UNSET:
            continue  # typer's own adapter decides
        taken += 1
        expected = typers_answer(annotation, value)
        assert plain == expected and type(plain) is type(expected), (annotation, value)
        if isinstance(expected, float):
            assert repr(plain) == repr(expected)  # -0.0 stays -0.0
    assert taken  # the plain path is used at all


def test_decimals_of_every_length_read_as_typer_reads_them():
    rng = random.Random(9)
    for _ in range(400):
        whole = str(rng.randrange(10 ** rng.randint(1, 15)))
        text = f"{rng.choice(['', '-'])}{whole}.{rng.randrange(10**15):0{rng.randint(1, 15)}d}"
        plain = plain_value(float, text)
        assert plain is not _UNSET
        assert repr(plain) == repr(typers_answer(float, text)), text


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMCTL_STORE", raising=False)
    assert CliRunner().invoke(app, ["init"]).exit_code == 0
    return tmp_path


@pytest.mark.usefixtures("project", "fake_embedder")
def test_the_cli_reads_plain_values_without_pydantic():
    from typer import _coercion, core

    assert core.build_runtime_param is not _coercion.build_runtime_param  # the plain step is in
    runner = CliRunner()
    args = ["add", "we ship on Thursdays", "--importance", "0.25", "--tag", "b", "--tag", "a"]
    added = runner.invoke(app, [*args, "--title", "Ship day", "--json"])
    assert added.exit_code == 0, added.output
    shown = json.loads(
        runner.invoke(app, ["show", json.loads(added.stdout)["id"], "--json"]).stdout
    )
    assert (shown["importance"], shown["tags"], shown["title"]) == (0.25, ["a", "b"], "Ship day")


@pytest.mark.usefixtures("project")
def test_values_typer_refuses_are_still_refused():
    runner = CliRunner()
    for bad in (["--importance", "abc"], ["--importance", "1e400x"], ["--confidence", ""]):
        result = runner.invoke(app, ["add", "the build needs node 20", *bad])
        assert result.exit_code == 2, result.output
        assert bad[0] in result.output
