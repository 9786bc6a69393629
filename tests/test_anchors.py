"""Anchors: front matter that stays byte-stable, globs, proposals from text, staleness."""

from __future__ import annotations

import pytest

from memctl.core.codebase.anchor_proposals import propose_anchors
from memctl.core.codebase.anchors import (
    Anchors,
    anchors_from,
    command_matches,
    path_matches,
    renamed_anchors,
    staleness,
)
from memctl.core.codebase.project_id import normalise_remote
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.frontmatter import parse_memory, render_memory

PLAIN = b"""---
id: abc
title: Deploy
type: procedural
version: 1
---

We deploy with make release.
"""

ANCHORED = b"""---
id: abc
type: procedural
version: 1
project: github.com/acme/shop
apply: always
paths:
- src/**/*.resx
symbols:
- ResourceLoader
commands:
- make release
mentions: 2
---

Regenerate the Designer.cs after editing a .resx.
"""


def roundtrip(raw: bytes) -> bytes:
    return render_memory(parse_memory("m.md", raw, "abc", "semantic"), full=False)


def test_a_memory_without_anchors_renders_byte_for_byte_as_before():
    assert roundtrip(PLAIN) == PLAIN


def test_anchor_keys_keep_their_fixed_place_after_memctls_fields():
    assert roundtrip(ANCHORED) == ANCHORED
    shuffled = ANCHORED.replace(b"project: github.com/acme/shop\n", b"").replace(
        b"mentions: 2\n", b"mentions: 2\nproject: github.com/acme/shop\n"
    )
    assert roundtrip(shuffled) == ANCHORED
    memory = parse_memory("m.md", ANCHORED, "abc", "semantic")
    assert anchors_from(memory.extra) == Anchors(
        ("src/**/*.resx",), ("ResourceLoader",), ("make release",), "always"
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [("apply: sometimes", "'apply' is 'sometimes'"), ("paths: {a: 1}", "'paths' must be a list")],
)
def test_a_bad_anchor_is_refused_with_its_line(line, problem):
    raw = f"---\nid: abc\ntitle: t\n{line}\n---\nbody\n".encode()
    with pytest.raises(InvalidMemoryFile) as error:
        parse_memory("m.md", raw, "abc", "semantic")
    assert problem in str(error.value) and error.value.line == 4


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("src/**/*.resx", "src/ui/i18n/Strings.resx", True),
        ("src/**/*.resx", "src/Strings.resx", True),
        ("src/*.py", "src/app/main.py", False),
        ("docs/", "docs/guide/intro.md", True),
        ("Directory.Packages.props", "build/Directory.Packages.props", True),
        ("package.json", "package.json.bak", False),
        ("**/*.Designer.cs", "src/Strings.Designer.cs", True),
    ],
)
def test_path_globs(pattern, path, expected):
    assert path_matches(pattern, path) is expected


def test_a_command_anchor_matches_the_start_of_any_command_in_a_line():
    assert command_matches("pnpm changeset", "cd web && FOO=1 pnpm changeset --empty")
    assert not command_matches("pnpm changeset", "pnpm install")
    assert command_matches("make", "make -j4 release")


TREE = frozenset(
    {
        "src/i18n/Strings.resx",
        "src/i18n/Strings.Designer.cs",
        "Directory.Packages.props",
        ".changeset/config.json",
        "scripts/release.sh",
        "src/loader.py",
    }
)


def test_proposals_name_only_what_exists_in_the_tree():
    text = (
        "When you edit a .resx, regenerate its Designer.cs; bump versions in "
        "Directory.Packages.props, run `pnpm changeset` and `scripts/release.sh --dry`. "
        "ResourceLoader caches; see src/old_module.py and MissingThing."
    )
    proposal = propose_anchors(text, TREE, lambda name: name == "ResourceLoader")
    assert proposal.anchors.paths == (
        "**/*.resx",
        "**/*.Designer.cs",
        "Directory.Packages.props",
    )
    assert proposal.anchors.symbols == ("ResourceLoader",)
    assert proposal.anchors.commands == ("pnpm changeset", "scripts/release.sh")
    assert "paths: **/*.resx" in proposal.describe()


def test_staleness_names_what_is_gone_and_renames_carry_paths():
    anchors = Anchors(("src/loader.py", "src/**/*.resx"), ("ResourceLoader", "OldName"))
    why = staleness(anchors, TREE, lambda name: name == "ResourceLoader")
    assert not why.missing_paths and why.missing_symbols == ("OldName",)
    moved = renamed_anchors(anchors, {"src/loader.py": "src/resources/loader.py"})
    assert moved.paths == ("src/resources/loader.py", "src/**/*.resx")
    assert staleness(moved, TREE, lambda _: True).missing_paths == ("src/resources/loader.py",)


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Shop.git",
        "https://bot@github.com/acme/shop",
        "ssh://git@github.com:22/acme/shop/",
    ],
)
def test_every_spelling_of_a_remote_names_one_project(url):
    assert normalise_remote(url) == "github.com/acme/shop"


@pytest.mark.parametrize(
    ("memory_type", "text", "shared"),
    [
        ("preference", "I prefer short answers in bullet points", True),
        ("preference", "Code Style: use `testify/assert` in table-driven tests", False),
        ("procedural", "Always answer in English", False),
    ],
)
def test_only_preferences_that_name_no_project_stay_shared(memory_type, text, shared):
    from memctl.service.anchoring import stays_shared

    assert stays_shared(memory_type, text, ("preference", "profile")) is shared


def test_a_long_memory_does_not_repeat_its_opening_words_in_a_block():
    from memctl.core.files.memory import first_line
    from memctl.core.recall.hook_blocks import BlockItem, memory_line

    body = "Before opening a PR, verify: [ ] Changeset created if user-facing (file in `.changeset/` with correct type)"
    line = memory_line(BlockItem("m1", first_line(body), "procedural", body))
    assert line.count("Before opening a PR") == 1 and "correct type" in line


def test_proposals_give_each_anchor_its_own_kind_and_scope_rules_to_their_files():
    from memctl.core.codebase.anchor_proposals import propose_anchors

    files = ["src/billing/invoice.py", "script/generate-docs", "scripts/release.py", "Makefile"]

    def propose(text: str):
        return propose_anchors(text, files, lambda name: False).anchors

    named = propose("Edit `src/billing/invoice.py` with care: totals are rounded there.")
    assert named.paths == ("src/billing/invoice.py",) and named.commands == ()
    scoped = propose(
        "When you change src/billing/invoice.py, run the invoice tests before committing."
    )
    assert scoped.paths == ("src/billing/invoice.py",) and scoped.apply != "always"
    ran = propose("Run `script/generate-docs` after changing a tool.")
    assert ran.commands == ("script/generate-docs",) and ran.paths == ()
    assert propose("Run `scripts/release.py --dry-run` first.").commands == ("scripts/release.py",)
    assert propose("Before committing, run `make lint`.").apply == "always"
