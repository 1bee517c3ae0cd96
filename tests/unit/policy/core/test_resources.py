"""Integer resource arithmetic and Kubernetes quantity parsing (`extender.policy.core.resources`)."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from extender.policy.core.resources import (
    AMOUNT_MAX,
    CPU,
    EMPTY,
    GPU,
    MEMORY,
    PODS,
    QuantityError,
    Resources,
    describe,
    describe_amount,
    parse_quantity,
    to_base_units,
    total,
)

GI = 2**30
MI = 2**20


@pytest.mark.parametrize(
    ("name", "quantity", "expected"),
    [
        pytest.param(CPU, "500m", 500, id="500m of cpu is 500 millicores"),
        pytest.param(CPU, "2", 2000, id="2 cpu is 2000 millicores"),
        pytest.param(CPU, "1.5", 1500, id="1.5 cpu is 1500 millicores"),
        pytest.param(CPU, 2, 2000, id="an int of cpu is whole cores"),
        pytest.param(CPU, 0.25, 250, id="a float of cpu is fractional cores"),
        pytest.param(CPU, "0.1m", 1, id="a tenth of a millicore rounds up to one millicore"),
        pytest.param(CPU, "1.0001", 1001, id="1.0001 cpu (1000.1m) rounds up to 1001m"),
        pytest.param(CPU, "  250m ", 250, id="surrounding blanks are ignored"),
        pytest.param(MEMORY, "4Gi", 4 * GI, id="4Gi is 4 x 2^30 bytes"),
        pytest.param(MEMORY, "1.5Ki", 1536, id="1.5Ki is 1536 bytes"),
        pytest.param(MEMORY, "129M", 129_000_000, id="129M is 129 x 10^6 bytes"),
        pytest.param(MEMORY, "1k", 1000, id="1k is 1000 bytes"),
        pytest.param(MEMORY, "1e3", 1000, id="1e3 is an exponent, 1000 bytes"),
        pytest.param(MEMORY, "2E3", 2000, id="2E3 is an exponent too, 2000 bytes"),
        pytest.param(MEMORY, "2E", 2 * 10**18, id="a bare E is the exa suffix"),
        pytest.param(MEMORY, "0.5", 1, id="half a byte rounds up to one byte"),
        pytest.param(MEMORY, "100m", 1, id="100 millibytes round up to one byte"),
        pytest.param(MEMORY, 1024, 1024, id="an int of memory is bytes"),
        pytest.param(GPU, "1", 1, id="one GPU is a plain count"),
        pytest.param(PODS, 110, 110, id="pods are a plain count"),
    ],
)
def test_quantities_parse_into_base_units_rounding_up(name: str, quantity: str | int | float, expected: int) -> None:
    assert to_base_units(name, quantity) == expected


def test_parse_quantity_is_exact() -> None:
    # 0.1 + 0.2 in binary floating point is 0.30000000000000004; a Decimal keeps 0.3 exactly.
    assert parse_quantity("0.1") + parse_quantity("0.2") == Decimal("0.3")


@pytest.mark.parametrize(
    "quantity",
    [
        pytest.param("", id="an empty string"),
        pytest.param("   ", id="only blanks"),
        pytest.param("abc", id="a word"),
        pytest.param("two", id="a number spelled out"),
        pytest.param("1.2.3", id="two decimal points"),
        pytest.param("Gi", id="a suffix without a number"),
        pytest.param("m", id="the milli suffix alone"),
        pytest.param("4GB", id="a unit Kubernetes does not know (GB)"),
        pytest.param("1K", id="an upper-case K (only k is kilo)"),
        pytest.param("1mi", id="a lower-case binary suffix"),
        pytest.param("1e3Gi", id="an exponent and a suffix together"),
        pytest.param("1_000", id="digits grouped with underscores"),
        pytest.param("\u0663", id="a digit outside ASCII"),
        pytest.param("NaN", id="not a number"),
        pytest.param("Infinity", id="infinity"),
        pytest.param(float("nan"), id="a float NaN"),
        pytest.param(float("inf"), id="a float infinity"),
    ],
)
def test_bad_quantities_raise_quantity_error(quantity: str | float) -> None:
    with pytest.raises(QuantityError, match="not a resource quantity"):
        to_base_units(MEMORY, quantity)


@pytest.mark.parametrize(
    ("name", "quantity", "message"),
    [
        pytest.param(MEMORY, "1e999999", "exponent beyond", id="a huge exponent"),
        pytest.param(MEMORY, "1e-999999", "exponent beyond", id="a huge negative exponent"),
        pytest.param(
            MEMORY, "1e5000", "exponent beyond", id="an exponent whose integer would pass Python's digit limit"
        ),
        pytest.param(MEMORY, "8Ei", "over 9223372036854775807 bytes", id="8 EiB is one byte over an int64"),
        pytest.param(MEMORY, str(2**63), "over 9223372036854775807 bytes", id="2^63 bytes"),
        pytest.param(MEMORY, 2**64, "out of range", id="an integer over int64"),
        pytest.param(CPU, "9223372036854776", "over 9223372036854775807 millicores", id="cores over int64 millicores"),
        pytest.param(MEMORY, "-1", "negative", id="a negative amount"),
        pytest.param(MEMORY, "1" * 65, "65 characters", id="a 65-digit number"),
        pytest.param(MEMORY, 1e300, "exponent beyond", id="a huge float"),
        pytest.param(MEMORY, True, "a bool", id="a JSON true"),
        pytest.param(MEMORY, [1], "a list", id="a list"),
        pytest.param(MEMORY, {"a": 1}, "a dict", id="an object"),
        pytest.param(MEMORY, None, "a NoneType", id="a null"),
    ],
)
def test_quantities_are_bounded(name: str, quantity: object, message: str) -> None:
    started = time.perf_counter()
    with pytest.raises(QuantityError, match=message):
        to_base_units(name, quantity)  # type: ignore[arg-type]
    assert time.perf_counter() - started < 0.01


def test_the_largest_amounts_are_exact() -> None:
    assert to_base_units(MEMORY, str(AMOUNT_MAX)) == AMOUNT_MAX
    assert to_base_units(MEMORY, "7Ei") == 7 * 2**60
    assert to_base_units(CPU, "9223372036854775") == 9223372036854775000
    assert to_base_units(MEMORY, "0." + "0" * 60 + "1") == 1


def test_quantity_error_is_a_value_error_naming_the_text() -> None:
    with pytest.raises(ValueError, match="'lots'"):
        Resources.parse({CPU: "lots"})


def test_parse_reads_a_requests_map_and_drops_zeros() -> None:
    parsed = Resources.parse({CPU: "500m", MEMORY: "1Gi", GPU: "0"})
    assert parsed == Resources({CPU: 500, MEMORY: GI})
    assert parsed.names() == {CPU, MEMORY}
    assert Resources.parse(None) == EMPTY


R = Resources


@pytest.mark.parametrize(
    ("left", "right", "total_", "difference"),
    [
        pytest.param(
            R({CPU: 2000, MEMORY: 4 * GI}),
            R({CPU: 500}),
            R({CPU: 2500, MEMORY: 4 * GI}),
            R({CPU: 1500, MEMORY: 4 * GI}),
            id="2 CPU 4Gi with half a CPU: 2.5 CPU summed, 1.5 CPU left",
        ),
        pytest.param(
            R({CPU: 1000}),
            R({CPU: 1000}),
            R({CPU: 2000}),
            EMPTY,
            id="subtracting an equal amount drops the entry entirely",
        ),
        pytest.param(
            R({CPU: 1000}),
            R({GPU: 1}),
            R({CPU: 1000, GPU: 1}),
            R({CPU: 1000, GPU: -1}),
            id="subtracting what is absent goes negative (overcommit stays visible)",
        ),
        pytest.param(EMPTY, EMPTY, EMPTY, EMPTY, id="nothing plus nothing is nothing"),
    ],
)
def test_arithmetic(left: Resources, right: Resources, total_: Resources, difference: Resources) -> None:
    assert left + right == total_
    assert left - right == difference
    assert (left - right).amounts == difference.amounts


def test_arithmetic_returns_new_values() -> None:
    bag = R({CPU: 1000})
    _ = bag + R({CPU: 1000})
    _ = bag - R({CPU: 1000})
    assert bag == R({CPU: 1000})


def test_scaled_and_total() -> None:
    # 9 pods of 2 CPU, 4Gi = 18 CPU, 36Gi.
    pod = R({CPU: 2000, MEMORY: 4 * GI, PODS: 1})
    assert pod.scaled(9) == R({CPU: 18_000, MEMORY: 36 * GI, PODS: 9})
    assert total([pod] * 9) == pod.scaled(9)
    assert pod.scaled(0) == EMPTY
    assert total([]) == EMPTY


def test_equal_bags_hash_alike() -> None:
    assert hash(R({CPU: 1, MEMORY: 2})) == hash(R([(MEMORY, 2), (CPU, 1)]))
    assert R({CPU: 1}) != {CPU: 1}
    assert not EMPTY
    assert EMPTY.is_empty()


@pytest.mark.parametrize(
    ("request_", "free", "fits", "missing", "shortfall"),
    [
        pytest.param(
            R({CPU: 2000, MEMORY: 4 * GI}),
            R({CPU: 4000, MEMORY: 8 * GI}),
            True,
            (),
            EMPTY,
            id="2 CPU 4Gi fits in 4 CPU 8Gi",
        ),
        pytest.param(
            R({CPU: 2000}),
            R({CPU: 2000}),
            True,
            (),
            EMPTY,
            id="an exact fit fits",
        ),
        pytest.param(
            R({CPU: 2000, MEMORY: 4 * GI}),
            R({CPU: 1500, MEMORY: 8 * GI}),
            False,
            (CPU,),
            R({CPU: 500}),
            id="2 CPU in 1.5 CPU is short half a CPU",
        ),
        pytest.param(
            R({CPU: 1000, MEMORY: GI, GPU: 1}),
            R({CPU: 8000, MEMORY: 512 * MI}),
            False,
            (MEMORY, GPU),
            R({MEMORY: 512 * MI, GPU: 1}),
            id="a GPU on a node without GPUs is short the GPU and half a GiB",
        ),
        pytest.param(EMPTY, EMPTY, True, (), EMPTY, id="nothing fits anywhere"),
    ],
)
def test_fits_in_and_shortfall(
    request_: Resources, free: Resources, fits: bool, missing: tuple[str, ...], shortfall: Resources
) -> None:
    assert request_.fits_in(free) is fits
    assert request_.missing_names(free) == tuple(sorted(missing))
    assert request_.shortfall(free) == shortfall


@pytest.mark.parametrize(
    ("resources", "text"),
    [
        pytest.param(
            R({CPU: 2000, MEMORY: 4 * GI, GPU: 1}), "2 CPU, 4 GiB, 1 GPU", id="cpu, memory, GPU in that order"
        ),
        pytest.param(R({GPU: 1, MEMORY: 4 * GI, CPU: 2000}), "2 CPU, 4 GiB, 1 GPU", id="order is fixed whatever order"),
        pytest.param(R({CPU: 1500, PODS: 1}), "1.5 CPU", id="fractional cores and no pods count"),
        pytest.param(R({CPU: 250}), "0.25 CPU", id="a quarter core"),
        pytest.param(R({MEMORY: 512 * MI}), "512 MiB", id="mebibytes below a GiB"),
        pytest.param(R({MEMORY: 3 * 2**10}), "3 KiB", id="kibibytes"),
        pytest.param(R({MEMORY: 100}), "100 B", id="plain bytes"),
        pytest.param(R({MEMORY: 2 * 2**40}), "2 TiB", id="tebibytes"),
        pytest.param(R({"example.com/fpga": 2, CPU: 1000}), "1 CPU, 2 example.com/fpga", id="other resources last"),
        pytest.param(R({PODS: 1}), "nothing", id="a pods slot alone is nothing"),
        pytest.param(EMPTY, "nothing", id="empty is nothing"),
    ],
)
def test_describe(resources: Resources, text: str) -> None:
    assert describe(resources) == text


def test_describe_amount_of_pods() -> None:
    assert describe_amount(PODS, 3) == "3 pods"


@pytest.mark.parametrize(
    ("resources", "quantities"),
    [
        pytest.param(R({CPU: 1500, MEMORY: GI}), {"cpu": "1500m", "memory": "1073741824"}, id="cpu in millicores"),
        pytest.param(R({GPU: 2, PODS: 1}), {"nvidia.com/gpu": "2", "pods": "1"}, id="counts as plain integers"),
        pytest.param(EMPTY, {}, id="nothing"),
    ],
)
def test_to_quantities_round_trips(resources: Resources, quantities: dict[str, str]) -> None:
    assert resources.to_quantities() == quantities
    assert Resources.parse(resources.to_quantities()) == resources
