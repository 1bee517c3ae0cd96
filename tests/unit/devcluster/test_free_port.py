"""The ports handed to local components: outside the kernel's ephemeral range, so an outgoing connection made
before the component binds cannot take one, and never the same one twice."""

from __future__ import annotations

import socket

from extender.devcluster import processes
from extender.devcluster.processes import LISTEN_PORTS_FROM, free_port


def test_ports_come_from_below_the_ephemeral_range_and_are_not_repeated() -> None:
    floor = processes.ephemeral_floor()
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    if floor - LISTEN_PORTS_FROM >= 1000:
        assert all(LISTEN_PORTS_FROM <= port < floor for port in ports)


def test_a_port_in_use_is_never_handed_out() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        assert taken not in {free_port() for _ in range(50)}
