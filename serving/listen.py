"""The listening socket each service binds before it starts.

Bound first, so a port in use or an address that is not this machine's is one line (``OSError``)
and a service never says "ready" for a port it does not hold. Shared by the worker, the green
agent and the purple participants (a leaf: stdlib only, any component may import it).
"""

from __future__ import annotations

import socket

BACKLOG = 2048


def bind_host(host: str) -> str:
    """``[::1]`` (the URL form of an IPv6 address) becomes ``::1``: what ``bind`` needs."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1]
    return host


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, inheritable (uvicorn's workers serve it)."""
    host = bind_host(host)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock
