"""YAML from untrusted files: bounded aliases, bounded nesting, bad values as marked errors.

PyYAML's safe loader still expands aliases: nine lines of nested aliases (a "billion laughs")
build a structure with 10^9 leaves that anything walking it never finishes, and 50,000 nested
`[` exhaust the recursion limit. This loader counts what an alias would expand to and how deep
the nodes go while composing, before anything is built, and refuses past small bounds.
"""

from __future__ import annotations

from typing import Any

import yaml

ComposerError = yaml.composer.ComposerError
ConstructorError = yaml.constructor.ConstructorError
AliasEvent = yaml.events.AliasEvent
MappingNode, SequenceNode = yaml.nodes.MappingNode, yaml.nodes.SequenceNode

MAX_DEPTH = 32  # nested lists and mappings; real front matter uses 3
MAX_ALIASES = 16
MAX_EXPANDED_NODES = 20_000  # nodes after expanding every alias
MAX_YAML_CHARS = 1024 * 1024  # config.yaml and other YAML files that are not memories


class BoundedSafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader with limits on nesting, alias count and expanded size."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise ComposerError(
                    None, None, f"more than {MAX_ALIASES} aliases", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"nested deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None and self._aliases:
            _check_expanded_size(node)
        return node

    def construct_yaml_timestamp(self, node):
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(
                None, None, f"'{node.value}' is not a valid date or time ({exc})", node.start_mark
            ) from None


BoundedSafeLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", BoundedSafeLoader.construct_yaml_timestamp
)


def _check_expanded_size(root) -> None:
    """Refuse a node graph whose aliases expand past MAX_EXPANDED_NODES or refer to themselves."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ComposerError(None, None, "an alias refers to itself", node.start_mark)
        open_nodes.add(key)
        total = 1
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_EXPANDED_NODES:
                raise ComposerError(
                    None,
                    None,
                    f"aliases expand to more than {MAX_EXPANDED_NODES} values",
                    child.start_mark,
                )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root)


_C_LOADER = getattr(yaml, "CSafeLoader", None)
_UNSURE = object()


def _load_with_libyaml(text: str) -> Any:
    """The document through libyaml (~10x faster than PyYAML's Python parser) when its events
    show no alias and no nesting past MAX_DEPTH; _UNSURE otherwise, or when libyaml finds a
    problem (the Python loader then gives memctl's message and line)."""
    if _C_LOADER is None:
        return _UNSURE
    try:
        depth = 0
        for event in yaml.parse(text, Loader=_C_LOADER):
            if isinstance(event, AliasEvent):
                return _UNSURE
            if isinstance(event, yaml.events.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return _UNSURE
            elif isinstance(event, yaml.events.CollectionEndEvent):
                depth -= 1
        return yaml.load(text, Loader=_C_LOADER)  # noqa: S506 - libyaml's safe loader
    except Exception:  # noqa: BLE001 - any problem: the Python loader reports it properly
        return _UNSURE


def load_bounded(text: str) -> Any:
    """Parse one YAML document with the limits above; errors are yaml.YAMLError with a mark."""
    fast = _load_with_libyaml(text)
    if fast is not _UNSURE:
        return fast
    loader = BoundedSafeLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
