"""Typed reads of raw Kubernetes JSON, checked against the API server's own rules.

Every reader takes the parent mapping, the key and the field's path, and returns a value of exactly the
type the model keeps — a string within its length and character rules, an integer within its range, a
mapping of strings — or raises `FieldError` naming the path and showing (a bounded excerpt of) what was
found. Absent and `null` fields read as their default, as in the API. Names follow
`k8s.io/apimachinery/pkg/util/validation`: DNS-1123 labels (namespaces), DNS-1123 subdomains (pods,
nodes, scheduler and PriorityClass names), path segments (custom resources), qualified names (label,
annotation and resource keys) and label values. Nothing here knows a Kubernetes kind: `convert` does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

Json = Mapping[str, Any]

DNS_LABEL_MAX_CHARS = 63
DNS_SUBDOMAIN_MAX_CHARS = 253
LABEL_VALUE_MAX_CHARS = 63
QUALIFIED_NAME_MAX_CHARS = 63
"""The name part of a qualified name (after the optional `prefix/`)."""
TEXT_MAX_CHARS = 1024
"""Longest free-form string read (a UID, a layer name, a condition type), characters."""
TIMESTAMP_MAX_CHARS = 64
INT32 = (-(2**31), 2**31 - 1)
SHOWN_CHARS = 80
"""How much of an offending value an error message shows, characters."""
VALIDATED_NAMES_LIMIT = 65536
"""Label keys and values remembered as valid (they repeat across objects) before the memo starts afresh."""

_DNS_BYTES = b"-.0123456789abcdefghijklmnopqrstuvwxyz"
_EMPTY_LABEL_OR_EDGE_DASH = ("..", ".-", "-.")
_QUALIFIED_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_valid_keys: set[str] = set()
_valid_values: set[str] = set()


class FieldError(ValueError):
    """A field that does not hold what the API allows there; the message names the path."""


def show(value: Any) -> str:
    """A bounded, printable rendering of a value for an error message."""
    text = repr(value) if not isinstance(value, list | dict) else f"a {type(value).__name__} {value!r}"
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def mapping(parent: Json, key: str, path: str) -> Json:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldError(f"{path}={show(value)} is not an object")
    return value


def sequence(parent: Json, key: str, path: str) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldError(f"{path}={show(value)} is not a list")
    return value


def objects(parent: Json, key: str, path: str) -> list[Json]:
    """A list whose entries are all objects."""
    items = sequence(parent, key, path)
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise FieldError(f"{path}[{index}]={show(item)} is not an object")
    return items


def text(parent: Json, key: str, path: str, *, max_chars: int = TEXT_MAX_CHARS) -> str:
    """A printable string of at most `max_chars`; "" when absent."""
    value = parent.get(key)
    if value is None:
        return ""
    return checked_text(value, path, max_chars=max_chars)


def checked_text(value: Any, path: str, *, max_chars: int = TEXT_MAX_CHARS) -> str:
    if not isinstance(value, str):
        raise FieldError(f"{path}={show(value)} is not a string")
    if len(value) > max_chars:
        raise FieldError(f"{path} is {len(value)} characters long (at most {max_chars})")
    if not value.isprintable():
        raise FieldError(f"{path}={show(value)} holds unprintable characters")
    return value


def flag(parent: Json, key: str, path: str) -> bool:
    value = parent.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise FieldError(f"{path}={show(value)} is not a boolean")
    return value


def integer(parent: Json, key: str, path: str, *, default: int = 0, bounds: tuple[int, int] = INT32) -> int:
    """A JSON integer within `bounds` (inclusive); `default` when absent."""
    value = parent.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"{path}={show(value)} is not a number")
    if not bounds[0] <= value <= bounds[1]:
        raise FieldError(f"{path}={show(value)} is out of range ({bounds[0]} to {bounds[1]})")
    return value


def integer_text(value: Any, path: str, *, bounds: tuple[int, int] = INT32) -> int:
    """An integer written as a decimal string (labels, annotations), within `bounds`."""
    if not isinstance(value, str) or len(value) > 12 or not value.strip().lstrip("+-").isdecimal():
        raise FieldError(f"{path}={show(value)} is not an integer")
    number = int(value)
    if not bounds[0] <= number <= bounds[1]:
        raise FieldError(f"{path}={show(value)} is out of range ({bounds[0]} to {bounds[1]})")
    return number


def seconds_text(value: Any, path: str) -> float:
    """A finite, non-negative number of seconds written as a string (or a number)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise FieldError(f"{path}={show(value)} is not a number")
    try:
        number = float(value) if not isinstance(value, str) or len(value) <= 32 else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise FieldError(f"{path}={show(value)} is not a number of seconds")
    return number


def phase(parent: Json, key: str, path: str) -> str:
    value = parent.get(key)
    if value is None:
        return "Pending"
    if not isinstance(value, str) or value not in _PHASES:
        raise FieldError(f"{path}={show(value)} is not one of {', '.join(_PHASES)}")
    return str(value)


def one_of(parent: Json, key: str, path: str, allowed: tuple[str, ...]) -> str:
    """One of `allowed`; the first when absent."""
    value = parent.get(key)
    if value is None:
        return allowed[0]
    if not isinstance(value, str) or value not in allowed:
        raise FieldError(f"{path}={show(value)} is not one of {', '.join(allowed)}")
    return value


def is_dns_subdomain(name: str) -> bool:
    """Lower-case letters, digits, `-` and `.`, at most 253, each dot-separated label starting and ending
    with a letter or digit (string scans, linear in the name: no regular expression to backtrack)."""
    return (
        0 < len(name) <= DNS_SUBDOMAIN_MAX_CHARS
        and not name.encode().translate(None, _DNS_BYTES)
        and name[0] not in "-."
        and name[-1] not in "-."
        and not any(sequence in name for sequence in _EMPTY_LABEL_OR_EDGE_DASH)
    )


def dns_label(value: Any, path: str) -> str:
    if not isinstance(value, str) or len(value) > DNS_LABEL_MAX_CHARS or "." in value or not is_dns_subdomain(value):
        raise FieldError(f"{path}={show(value)} is not a DNS-1123 label (lower-case letters, digits, '-'; ≤ 63)")
    return value


def dns_subdomain(value: Any, path: str) -> str:
    if not isinstance(value, str) or not is_dns_subdomain(value):
        raise FieldError(
            f"{path}={show(value)} is not a DNS-1123 subdomain (lower-case letters, digits, '-', '.'; ≤ 253)"
        )
    return value


def path_segment(value: Any, path: str) -> str:
    """A custom resource's name: printable, at most 253 characters, no `/` or `%`, not `.` or `..`."""
    if (
        not isinstance(value, str)
        or not value
        or len(value) > DNS_SUBDOMAIN_MAX_CHARS
        or value in (".", "..")
        or "/" in value
        or "%" in value
        or not value.isprintable()
    ):
        raise FieldError(f"{path}={show(value)} is not a valid name (≤ 253 printable characters, no '/' or '%')")
    return value


def qualified_name(value: Any, path: str) -> str:
    """A label, annotation or resource key: `[prefix/]name`, the prefix a DNS subdomain."""
    if not isinstance(value, str):
        raise FieldError(f"{path}: key {show(value)} is not a string")
    if value in _valid_keys:
        return value
    prefix, slash, name = value.rpartition("/")
    if (
        len(name) > QUALIFIED_NAME_MAX_CHARS
        or not _QUALIFIED_PART.fullmatch(name)
        or (slash and not is_dns_subdomain(prefix))
    ):
        raise FieldError(f"{path}: key {show(value)} is not a qualified name ([DNS subdomain/]name, name ≤ 63)")
    _remember(_valid_keys, value)
    return value


def label_value(value: Any, path: str) -> str:
    if isinstance(value, str) and value in _valid_values:
        return value
    if (
        not isinstance(value, str)
        or len(value) > LABEL_VALUE_MAX_CHARS
        or (value and not _QUALIFIED_PART.fullmatch(value))
    ):
        raise FieldError(f"{path}={show(value)} is not a label value (letters, digits, '-', '_', '.'; ≤ 63)")
    _remember(_valid_values, value)
    return value


def labels(parent: Json, key: str, path: str) -> dict[str, str]:
    """A label map (also a node selector): qualified-name keys, label values."""
    found = mapping(parent, key, path)
    for name, value in found.items():
        label_value(value, f"{path}[{qualified_name(name, path)}]")
    return dict(found)


def timestamp(value: Any, path: str) -> float:
    """Seconds since the epoch of an RFC 3339 time (a datetime when YAML read it unquoted); 0 when absent."""
    if value is None or value == "":
        return 0.0
    try:
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, str) and len(value) <= TIMESTAMP_MAX_CHARS:
            return datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        pass
    raise FieldError(f"{path}={show(value)} is not a timestamp")


def _remember(memo: set[str], value: str) -> None:
    if len(memo) >= VALIDATED_NAMES_LIMIT:
        memo.clear()
    memo.add(value)
