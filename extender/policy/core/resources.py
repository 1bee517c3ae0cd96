"""Exact integer resource arithmetic and Kubernetes quantity parsing.

Every amount is an integer in the resource's base unit: millicores for `cpu`, bytes for `memory` and
`ephemeral-storage`, plain counts for everything else (`pods`, `nvidia.com/gpu`, ...). Integers make fit
decisions exact and reproducible; parsing rounds up, as the API server does when it compares requests.
Parsing is bounded: a quantity is at most `QUANTITY_MAX_CHARS` long, never negative, and at most
`AMOUNT_MAX` base units (an int64, what the API server's own quantities hold), so no input makes the
arithmetic grow with an exponent (`1e999999` is refused in microseconds, not expanded into an integer).
A `Resources` value is immutable; arithmetic returns new values and drops zero entries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from decimal import Context, Decimal, InvalidOperation
from functools import lru_cache

from extender.policy.core.memo import by_value

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"
MILLI_UNIT_RESOURCES = frozenset({CPU})
IDLENESS_DIMENSIONS = (CPU, MEMORY, GPU)
"""The resources whose free share measures how idle a node is."""

_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?")
"""A quantity's grammar: a signed decimal, then an exponent, a decimal suffix or a binary suffix."""
QUANTITY_MAX_CHARS = 64
"""Longest quantity text read (characters); canonical quantities are a dozen at most."""
QUANTITY_MAX_EXPONENT = 64
"""Largest decimal exponent (`e±N`) read; anything beyond makes an amount over `AMOUNT_MAX` or below
one nano-unit."""
AMOUNT_MAX = 2**63 - 1
"""Largest amount of one resource in base units: an int64, as the API server stores quantities."""
_EXACT = Context(prec=2 * QUANTITY_MAX_CHARS + 40, Emax=10**6, Emin=-(10**6))
"""Decimal arithmetic wide enough that scaling a quantity of at most `QUANTITY_MAX_CHARS` digits by a
suffix (at most 2^60) and by 1000 (millicores) is exact."""
_AMOUNT_MAX_DECIMAL = Decimal(AMOUNT_MAX)


class QuantityError(ValueError):
    """A string that is not a Kubernetes resource quantity."""


def parse_quantity(text: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity ("500m", "4Gi", "1.5", "2e3") into an exact Decimal.

    Only strings of at most `QUANTITY_MAX_CHARS` characters, ints and finite floats are quantities
    (not bools); the result may be huge or tiny (`1e999999`): `to_base_units` bounds it."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise QuantityError(f"not a resource quantity: a {type(text).__name__}, not a string or a number")
    if isinstance(text, int) and not -_AMOUNT_MAX_DECIMAL <= text <= _AMOUNT_MAX_DECIMAL:
        raise QuantityError(f"resource quantity {text} is out of range (at most {AMOUNT_MAX})")
    value = (text if isinstance(text, str) else repr(text)).strip()
    if len(value) > QUANTITY_MAX_CHARS:
        raise QuantityError(f"not a resource quantity: {len(value)} characters (at most {QUANTITY_MAX_CHARS})")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(f"not a resource quantity: {text!r}")
    exponent = match.group(2) or ""
    if exponent[1:].lstrip("+-").isdigit() and abs(int(exponent[1:])) > QUANTITY_MAX_EXPONENT:
        raise QuantityError(f"resource quantity {text!r}: exponent beyond ±{QUANTITY_MAX_EXPONENT}")
    try:
        for suffix, factor in _BINARY_SUFFIXES.items():
            if value.endswith(suffix):
                return _EXACT.multiply(Decimal(value[: -len(suffix)]), factor)
        if value[-1] in _DECIMAL_SUFFIXES and not value[-1].isdigit():
            return _EXACT.multiply(Decimal(value[:-1]), _DECIMAL_SUFFIXES[value[-1]])
        return _EXACT.plus(Decimal(value))
    except (InvalidOperation, ArithmeticError) as error:
        raise QuantityError(f"not a resource quantity: {text!r}") from error


def to_base_units(name: str, quantity: str | int | float) -> int:
    """The integer amount of `quantity` in `name`'s base unit (millicores for cpu), rounded up; a
    negative quantity, or one over `AMOUNT_MAX` base units, raises `QuantityError`."""
    if isinstance(quantity, bool) or not isinstance(quantity, str | int | float):
        raise QuantityError(f"not a resource quantity: a {type(quantity).__name__}, not a string or a number")
    milli = name in MILLI_UNIT_RESOURCES
    return by_value(_BASE_UNITS, (milli, quantity), _BASE_UNITS_LIMIT, lambda: _parsed_amount(name, quantity, milli))


def _parsed_amount(name: str, quantity: str | int | float, milli: bool) -> int:
    parsed = parse_quantity(quantity)
    if milli:
        parsed = _EXACT.multiply(parsed, 1000)
    if parsed < 0:
        raise QuantityError(f"resource quantity {quantity!r} is negative")
    if parsed > _AMOUNT_MAX_DECIMAL:
        raise QuantityError(f"resource quantity {quantity!r} is over {AMOUNT_MAX} {_unit(name)}")
    return math.ceil(parsed)


_BASE_UNITS: dict[tuple[bool, str | int | float], int] = {}
"""Memo of parsed quantities: a cluster's pods repeat a handful of request strings. Only quantities that
parsed are remembered, each at most `QUANTITY_MAX_CHARS` long."""
_BASE_UNITS_LIMIT = 4096
"""Quantities remembered before the memo starts afresh (a cluster repeats a few hundred; this bound keeps
what odd requests can leave behind to about half a MiB)."""


def _unit(name: str) -> str:
    return (
        "millicores" if name in MILLI_UNIT_RESOURCES else "bytes" if name in (MEMORY, "ephemeral-storage") else "units"
    )


class Resources:
    """An immutable bag of resource amounts in base units."""

    __slots__ = ("_amounts",)

    def __init__(self, amounts: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        items = amounts.items() if isinstance(amounts, Mapping) else amounts
        self._amounts: dict[str, int] = {name: value for name, value in items if value}

    @classmethod
    def parse(cls, quantities: Mapping[str, str | int | float] | None) -> Resources:
        """Resources from a Kubernetes `requests` / `allocatable` map."""
        return cls({name: to_base_units(name, q) for name, q in (quantities or {}).items()})

    def get(self, name: str) -> int:
        return self._amounts.get(name, 0)

    @property
    def amounts(self) -> Mapping[str, int]:
        """The amounts as a read-only mapping (for loops that cannot afford a method call per lookup)."""
        return self._amounts

    def items(self) -> Iterator[tuple[str, int]]:
        return iter(self._amounts.items())

    def names(self) -> frozenset[str]:
        return frozenset(self._amounts)

    def __add__(self, other: Resources) -> Resources:
        merged = dict(self._amounts)
        for name, value in other._amounts.items():
            merged[name] = merged.get(name, 0) + value
        return Resources(merged)

    def __sub__(self, other: Resources) -> Resources:
        merged = dict(self._amounts)
        for name, value in other._amounts.items():
            merged[name] = merged.get(name, 0) - value
        return Resources(merged)

    def scaled(self, factor: int) -> Resources:
        return Resources({name: value * factor for name, value in self._amounts.items()})

    def fits_in(self, free: Resources) -> bool:
        """True when every amount requested here is available in `free`."""
        available = free._amounts
        for name, value in self._amounts.items():  # noqa: SIM110 - a plain loop is faster on the filter path
            if value > available.get(name, 0):
                return False
        return True

    def missing_names(self, free: Resources) -> tuple[str, ...]:
        """Names of the resources `free` lacks for this request, in a stable order."""
        available = free._amounts
        return tuple(sorted(name for name, value in self._amounts.items() if value > available.get(name, 0)))

    def shortfall(self, free: Resources) -> Resources:
        """What is missing from `free` to hold this request (empty when it fits)."""
        available = free._amounts
        return Resources(
            {
                name: value - available.get(name, 0)
                for name, value in self._amounts.items()
                if value > available.get(name, 0)
            }
        )

    def is_empty(self) -> bool:
        return not self._amounts

    def __bool__(self) -> bool:
        return bool(self._amounts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resources) and self._amounts == other._amounts

    def __hash__(self) -> int:
        return hash(frozenset(self._amounts.items()))

    def __repr__(self) -> str:
        return f"Resources({self._amounts!r})"

    def to_quantities(self) -> dict[str, str]:
        """Kubernetes quantity strings (cpu in millicores, the rest as plain integers)."""
        return {
            name: f"{value}m" if name in MILLI_UNIT_RESOURCES else str(value)
            for name, value in sorted(self._amounts.items())
        }


EMPTY = Resources()


def total(resources: Iterable[Resources]) -> Resources:
    """The sum of many resource bags."""
    merged: dict[str, int] = {}
    for bag in resources:
        for name, value in bag.items():
            merged[name] = merged.get(name, 0) + value
    return Resources(merged)


def smallest(resources: Iterable[Resources]) -> Resources:
    """The element-wise minimum of many bags (a name missing from any bag counts 0): whatever fits one of
    them needs at least this much, so a node without this much free can hold none of them."""
    bags = list(resources)
    if not bags:
        return EMPTY
    names = set(bags[0].names()).intersection(*(bag.names() for bag in bags[1:]))
    return Resources({name: min(bag.get(name) for bag in bags) for name in names})


DESCRIPTIONS_MEMO = 1024
"""Request shapes whose descriptions are remembered."""


def describe_amount(name: str, value: int) -> str:
    """A short human form: `2 CPU`, `4 GiB`, `1 GPU`, `3 pods`."""
    if name == CPU:
        cores = value / 1000
        return f"{cores:g} CPU"
    if name in (MEMORY, "ephemeral-storage"):
        return _describe_bytes(value)
    if name == GPU:
        return f"{value} GPU"
    return f"{value} {name}"


def _describe_bytes(value: int) -> str:
    for suffix, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= factor:
            return f"{value / factor:g} {suffix}"
    return f"{value} B"


@lru_cache(maxsize=DESCRIPTIONS_MEMO)
def describe(resources: Resources) -> str:
    """`2 CPU, 4 GiB, 1 GPU` (the `pods` count is left out: every pod takes exactly one); remembered for
    the few request shapes a cluster has, as every filter summary names one."""
    order = {CPU: 0, MEMORY: 1, GPU: 2}
    parts = sorted((order.get(name, 3), name, value) for name, value in resources.items() if name != PODS)
    return ", ".join(describe_amount(name, value) for _, name, value in parts) or "nothing"
