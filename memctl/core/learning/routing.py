"""Which store a new memory belongs in: the person's own (user) store or the project's.

What is about the person (preferences, profile facts, statements about "I" or "the user") follows
them from project to project; decisions, procedures and facts about the code stay with the code.
Only extraction and the hooks route; `memctl add` writes where it is told.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

USER = "user"
PROJECT = "project"

# "I", "my", "the user", in English and Chinese; "we"/"our" speak for the team.
_ABOUT_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|the user(?:'s)?)\b|我(?!们)|用户",
    re.IGNORECASE,
)
# Anything that ties a statement to this project: the team, the code, the tools around it.
_ABOUT_PROJECT = re.compile(
    r"`|\b(?:we|we're|we've|our|ours|us|team|project|repo|repository|codebase|code|module|"
    r"function|class|service|api|endpoint|database|schema|migration|branch|commit|build|"
    r"deploy\w*|release|ci|pipeline|test(?:s|ing)?|bug|config\w*)\b|"
    r"\b\w+\.(?:py|go|js|ts|rs|java|rb|c|h|cpp|md|yaml|yml|json|toml|sql|sh)\b|"
    r"\w+/\w+|\b\w+\(\)|\b[a-z]+_[a-z_]+\b|"
    r"我们|项目|仓库|代码|部署|数据库|接口|团队",
    re.IGNORECASE,
)
_CAMEL_CASE = re.compile(r"\b[a-z]+[A-Z]\w*\b")  # an identifier such as getUserById


def names_project(text: str) -> bool:
    """The text names something of a project: its code, files, tools or team."""
    return bool(_ABOUT_PROJECT.search(text) or _CAMEL_CASE.search(text))


def about_person(text: str) -> bool:
    """The text speaks of the person ("I", "my", "the user") and of nothing in the project."""
    if not _ABOUT_PERSON.search(text):
        return False
    return not (_ABOUT_PROJECT.search(text) or _CAMEL_CASE.search(text))


def route(memory_type: str, text: str, settings: Mapping[str, Any]) -> str:
    """USER or PROJECT for a memory of this type and text, by the `routing:` settings."""
    if memory_type in (settings.get("user_types") or ()):
        return USER
    if memory_type in (settings.get("project_types") or ()):
        return PROJECT
    if settings.get("about_user", True) and about_person(text):
        return USER
    return PROJECT
