"""YAML data together with the line of every key, so a bad value is reported as `file:LINE`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from memctl.core.files.safe_yaml import MAX_YAML_CHARS, BoundedSafeLoader
from memctl.core.files.schema import KeyPath  # ("recall", "k"); a list item by its index


class BrokenYAML(ValueError):
    def __init__(self, line: int, problem: str):
        self.line = line
        self.problem = problem
        super().__init__(f"line {line}: {problem}")


def load_with_lines(text: str) -> tuple[Any, dict[KeyPath, int]]:
    """The data of a YAML text and the line of each key and item, read with the same bounds
    (size, aliases, depth, safe tags) as memory files (see core.files.safe_yaml)."""
    if len(text) > MAX_YAML_CHARS:
        raise BrokenYAML(1, f"larger than {MAX_YAML_CHARS // 1024} KiB; not read")
    loader = BoundedSafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise BrokenYAML(line, f"broken YAML: {getattr(exc, 'problem', exc)}") from None
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise BrokenYAML(1, f"broken YAML: {exc}") from None
    finally:
        loader.dispose()
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _collect_lines(node, (), lines)
    return data, lines


def line_of(lines: Mapping[KeyPath, int], keys: KeyPath) -> int:
    """The line of a key, else of the nearest enclosing key, else 1."""
    for end in range(len(keys), 0, -1):
        if keys[:end] in lines:
            return lines[keys[:end]]
    return 1


def _collect_lines(node: yaml.Node, keys: KeyPath, lines: dict[KeyPath, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = (*keys, str(key_node.value))
            lines[path] = key_node.start_mark.line + 1  # a repeated key: the last one counts
            _collect_lines(value_node, path, lines)
    elif isinstance(node, yaml.SequenceNode):
        for number, item in enumerate(node.value):
            path = (*keys, str(number))
            lines[path] = item.start_mark.line + 1
            _collect_lines(item, path, lines)
