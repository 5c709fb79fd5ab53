"""Loopback ports for test servers, below Linux's ephemeral range (32768-60999).

A port from bind(0) lies inside that range, where any outgoing connection of the machine can take it between
the check and the server's own bind (a CI run once lost its deployment for 480 s that way), and where a client
connecting to a port nobody listens on can connect to itself.
"""

from __future__ import annotations

import os
import random
import socket

_PICK = random.Random(os.getpid())


def free_port(low: int = 20000, high: int = 27000) -> int:
    """A port in [low, high) that nobody listens on and that can be bound on 127.0.0.1 now."""
    for _ in range(200):
        port = _PICK.randrange(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        with socket.socket() as probe:
            probe.settimeout(0.5)
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError(f"no free port found in {low}-{high - 1} on 127.0.0.1")
