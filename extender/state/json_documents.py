"""JSON snapshot files read as a stream: `_JsonStream` slides a window of text along the file and decodes one
value at a time, and `json_documents` hands out the file's documents, cutting a list's `items` array into
its objects one by one so a large dump is never held whole, as text or as objects. `NotJson` says the first
document is not JSON after all (a YAML flow mapping), before anything was handed out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from extender.state.dump_format import SnapshotFileError, list_extension

JSON_CHUNK_CHARS = 1 << 20
"""A JSON file is read this many characters at a time."""
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


class NotJson(Exception):
    """The file's first document is not JSON (nothing has been handed out yet)."""


class _JsonStream:
    """JSON values read one at a time from a file, through a window of text that slides along it."""

    def __init__(self, path: Path, handle: Any) -> None:
        self.path = path
        self.handle = handle
        self.text = ""
        self.pos = 0
        self.consumed = 0
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.handle.read(JSON_CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.consumed += self.pos
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            match = _JSON_SPACE.match(self.text, self.pos)
            self.pos = match.end() if match else self.pos
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._more():
                return ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            self.fail(f"expected {char!r}")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                if self._more():
                    continue  # the value may run on past the window
                self.fail(error.msg, self.consumed + error.pos)
            if end >= len(self.text) and self._more():
                continue  # a number may go on in the next window
            self.pos = end
            return value

    def fail(self, message: str, at: int | None = None) -> NoReturn:
        position = self.consumed + self.pos if at is None else at
        raise SnapshotFileError(f"{self.path}: not valid JSON: {message} at character {position}")


def json_documents(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("r", encoding="utf-8-sig") as handle:
        stream = _JsonStream(path, handle)
        position = 0
        handed_out = False
        while char := stream.peek():
            position += 1
            if char != "{":
                raise SnapshotFileError(f"{path}: document {position} is not a mapping")
            stream.pos += 1
            fields: dict[str, Any] = {}
            listed = False
            if stream.peek() == "}":
                stream.pos += 1
            else:
                while True:
                    try:
                        key = stream.value()
                    except SnapshotFileError as error:
                        if not handed_out:
                            raise NotJson from error
                        raise
                    if not isinstance(key, str):
                        stream.fail("expected a key")
                    stream.expect(":")
                    if key == "items" and stream.peek() == "[":
                        listed = True
                        for item in _json_array(stream):
                            handed_out = True
                            yield item
                    else:
                        fields[key] = stream.value()
                    if _json_separator(stream, "}"):
                        break
            handed_out = True
            if listed or str(fields.get("kind", "")).endswith("List"):
                yield from (item for item in fields.get("items") or [] if isinstance(item, dict))
                yield list_extension(fields)
            else:
                yield fields


def _json_array(stream: _JsonStream) -> Iterator[dict[str, Any]]:
    """The mappings of the array starting at the stream's position, parsed one at a time."""
    stream.pos += 1
    if stream.peek() == "]":
        stream.pos += 1
        return
    while True:
        item = stream.value()
        if isinstance(item, dict):
            yield item
        if _json_separator(stream, "]"):
            return


def _json_separator(stream: _JsonStream, closing: str) -> bool:
    """Past a ',' (False) or the `closing` bracket (True)."""
    char = stream.peek()
    if char not in (",", closing):
        stream.fail(f"expected ',' or {closing!r}")
    stream.pos += 1
    return char == closing
