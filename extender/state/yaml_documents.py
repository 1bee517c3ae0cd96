"""YAML snapshot files read quickly: `yaml_documents` hands out a file's documents, and a `kind: List` written
as kubectl writes it has its items cut out of the text and parsed one at a time. Each piece is parsed by
`_Loader`, the safe loader (libyaml's when available) with a quicker tag resolver, and plain maps, sequences
and strings are built directly; the result is what `yaml.safe_load` gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from extender.state.dump_format import SnapshotFileError, list_extension

YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML was built with it (several times faster, and its nodes are smaller)."""
_YAML_ITEMS_KEY = re.compile(r"items:[ \t]*(#.*)?$")

_YAML_STR = "tag:yaml.org,2002:str"
_YAML_MAP = "tag:yaml.org,2002:map"
_YAML_SEQ = "tag:yaml.org,2002:seq"
_YAML_MERGE = "tag:yaml.org,2002:merge"


class _Loader(YAML_LOADER):  # type: ignore[valid-type,misc]
    """The safe loader with a quicker resolver: libyaml calls back into Python to resolve every node's tag,
    and that was a third of the parse. Same tags: plain scalars go through the same implicit resolvers,
    looked up by first character; there are no path resolvers to follow."""

    _implicit: dict[str, list[tuple[str, Any]]] = {
        first: [*resolvers, *YAML_LOADER.yaml_implicit_resolvers.get(None, [])]
        for first, resolvers in YAML_LOADER.yaml_implicit_resolvers.items()
        if first is not None
    }
    _wildcard: list[tuple[str, Any]] = list(YAML_LOADER.yaml_implicit_resolvers.get(None, []))

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, pattern in self._implicit.get(value[:1], self._wildcard):
                    if pattern.match(value):
                        return tag
            return _YAML_STR
        return _YAML_MAP if kind is yaml.MappingNode else _YAML_SEQ

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


def _yaml_load(path: Path, text: str, where: str) -> Any:
    """One YAML document, as `yaml.safe_load` reads it; plain maps, sequences and strings (nearly every node of
    a Kubernetes object) are built directly, anything else by the safe constructor."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _yaml_build(loader, node)
    except yaml.YAMLError as error:
        raise SnapshotFileError(f"{path}: {where}{error}") from error
    except TypeError as error:  # a mapping or sequence used as a key
        raise SnapshotFileError(f"{path}: {where}{error}") from error
    finally:
        loader.dispose()


def _yaml_build(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    kind = node.__class__
    if kind is yaml.ScalarNode:
        return node.value if node.tag == _YAML_STR else loader.construct_object(node)
    if kind is yaml.MappingNode and node.tag == _YAML_MAP:
        built = {}
        for key, value in node.value:
            if key.tag == _YAML_MERGE:
                return loader.construct_object(node, deep=True)
            built[_yaml_build(loader, key)] = _yaml_build(loader, value)
        return built
    if kind is yaml.SequenceNode and node.tag == _YAML_SEQ:
        return [_yaml_build(loader, child) for child in node.value]
    return loader.construct_object(node, deep=True)


def yaml_documents(path: Path) -> Iterator[dict[str, Any]]:
    """YAML documents; a `kind: List` written as kubectl writes it (`items:` at the margin, each item a `- `
    entry at the margin) has its items cut out of the text and parsed one at a time."""
    position = 0
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            rest: list[str] = []
            item: list[str] = []
            item_line = 0
            in_items = listed = False
            for number, line in enumerate(handle, start=1):
                if in_items:
                    if line.startswith("-") and line[1:2] in (" ", "\t", "\n", "\r", ""):
                        if item:
                            yield from _yaml_item(path, item, item_line)
                        item, item_line, listed = [" " + line[1:]], number, True
                        continue
                    if not line.strip() or line[0] in " \t#":
                        item.append(line)
                        continue
                    in_items = False
                    if item:
                        yield from _yaml_item(path, item, item_line)
                        item = []
                marker = line.startswith(("---", "...")) and line[3:4] in (" ", "\t", "\n", "\r", "")
                if marker and (listed or any(text.strip() and text[0] not in "#%" for text in rest)):
                    position += 1
                    yield from _yaml_document(path, rest, listed, position)
                    rest, listed = [], False
                    if line.startswith("..."):
                        continue
                rest.append(line)
                if _YAML_ITEMS_KEY.match(line):
                    in_items = True
            if item:
                yield from _yaml_item(path, item, item_line)
            position += 1
            yield from _yaml_document(path, rest, listed, position)
    except OSError as error:
        raise SnapshotFileError(f"{path}: {error}") from error


def _yaml_item(path: Path, lines: list[str], first_line: int) -> Iterator[dict[str, Any]]:
    item = _yaml_load(path, "".join(lines), f"the list item at line {first_line}: ")
    if isinstance(item, dict):
        yield item


def _yaml_document(path: Path, lines: list[str], listed: bool, position: int) -> Iterator[dict[str, Any]]:
    documents = _yaml_load(path, "".join(lines), "")
    if documents is None and not listed:
        return
    if not isinstance(documents, dict):
        raise SnapshotFileError(f"{path}: document {position} is not a mapping")
    if listed or str(documents.get("kind", "")).endswith("List"):
        yield from (item for item in documents.get("items") or [] if isinstance(item, dict))
        yield list_extension(documents)
    else:
        yield documents
