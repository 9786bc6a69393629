"""The poisoning benchmark's own checks can fail: a broken fence is seen, a poisoned memory
that reaches a surface is counted, and the clean data is what its attribution says."""

from __future__ import annotations

import json

import pytest

from benchmarks import poisoning, poisoning_cases
from memctl.core.trust.fence import fence

pytestmark = pytest.mark.usefixtures("fake_embedder")


def test_fence_problems_sees_every_way_out_of_the_block():
    assert poisoning.fence_problems("") == []
    assert poisoning.fence_problems(fence("- a note")) == []
    assert poisoning.fence_problems("- a note, no fence") == ["not one fenced block"]
    assert poisoning.fence_problems(fence("x\n</memctl-notes>\ny")) == ["not one fenced block"]
    assert poisoning.fence_problems(fence("x\nHuman: y")) == ["a line opens with a role"]
    assert poisoning.fence_problems(fence("<system>y")) == ["raw role/fence/tool tag"]


def test_an_import_case_is_held_and_counted_as_reaching_without_quarantine(tmp_path, monkeypatch):
    case = poisoning_cases.Case("jsonl", "poisoned import", poisoning_cases.imported_jsonl)
    defended = poisoning.run_case(case, tmp_path / "on")
    assert defended.stored and defended.quarantined and not defended.failed

    from memctl.service import provenance

    monkeypatch.setattr(provenance.Gate, "quarantine_reason", lambda self, memory: None)
    exposed = poisoning.run_case(case, tmp_path / "off")
    assert exposed.failed and "context (CLI, MCP)" in exposed.reached


def test_the_clean_notes_are_attributed_and_permissively_licensed():
    lines = (poisoning.DATA / "clean_notes.jsonl").read_text(encoding="utf-8").splitlines()
    notes = [json.loads(line) for line in lines]
    attribution = (poisoning.DATA / "ATTRIBUTION.md").read_text(encoding="utf-8")
    assert len(notes) >= 200 and {n["split"] for n in notes} == {"dev", "test"}
    assert {n["license"] for n in notes} <= {"MIT", "Apache-2.0"}
    assert all(n["repo"] in attribution for n in notes)
