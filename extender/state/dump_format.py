"""What a dump holds besides Kubernetes objects, and the error a snapshot file raises. A `/debug/state` dump
is a `kind: List` whose top-level `tfjobExtender` key (`DUMP_EXTENSION_KEY`) carries the model's generation
and the reservations ledger; `reservation_record` writes one reservation of that ledger and
`parse_reservations` reads them back. `SnapshotFileError` is what every reader of a snapshot file raises, with
a message saying where and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.policy.core.resources import Resources
from extender.policy.core.snapshot import Reservation

DUMP_EXTENSION_KEY = "tfjobExtender"
"""Top-level key of a dump holding what is not a Kubernetes object: generation and reservations."""


class SnapshotFileError(ValueError):
    """A cluster snapshot file that cannot be read; the message says where and why."""


def reservation_record(reservation: Reservation) -> dict[str, Any]:
    return {
        "pod": reservation.pod,
        "group": reservation.group,
        "node": reservation.node,
        "requests": reservation.requests.to_quantities(),
        "expiresAt": reservation.expires_at,
    }


def parse_reservations(document: Mapping[str, Any]) -> list[Reservation]:
    try:
        records = (document.get(DUMP_EXTENSION_KEY) or {}).get("reservations") or []
        return [
            Reservation(r["pod"], r["group"], r["node"], Resources.parse(r["requests"]), float(r["expiresAt"]))
            for r in records
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise SnapshotFileError(f"{DUMP_EXTENSION_KEY}.reservations: malformed record ({error})") from error


def list_extension(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {DUMP_EXTENSION_KEY: fields.get(DUMP_EXTENSION_KEY) or {}}
