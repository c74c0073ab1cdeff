"""The URL a service advertises in its agent card, and the check every URL option gets at start.

A service bound to a wildcard address (``0.0.0.0``, ``::``) listens on every interface, but
``0.0.0.0`` is no address a peer can connect to, and ``127.0.0.1`` is the peer itself (inside a
container: the peer's own container). Without ``--card-url`` such a service advertises this
machine's address as others on its network reach it: the address its host name resolves to when
that is not loopback (in a Docker container, its address on the container network), else the
address of the interface its default route leaves by, else its host name. ``--card-url`` always
wins, and is checked: an absolute http(s) URL with a host and a valid port.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})
# A documentation address (TEST-NET-1): "connecting" a UDP socket to it sends nothing, but makes
# the kernel pick the interface a packet would leave by.
_ROUTE_PROBE = ("192.0.2.1", 9)


def check_url(value: str, what: str, *, wildcard_ok: bool = False) -> str:
    """``value`` if it is an absolute http(s) URL with a host and a valid port, else ValueError
    naming ``what`` (the option or variable) and the problem. A wildcard host (``0.0.0.0``) is
    refused unless ``wildcard_ok``: as a destination it is this machine, never a peer."""
    text = value.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{what}: not a valid URL ({exc}), got {value!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what}: must be an absolute http(s) URL, got {value!r}")
    if any(char.isspace() for char in text):
        raise ValueError(f"{what}: must not contain spaces, got {value!r}")
    if port == 0:
        raise ValueError(f"{what}: port 0 is not a port a peer can reach, got {value!r}")
    if parts.hostname in WILDCARD_HOSTS and not wildcard_ok:
        raise ValueError(
            f"{what}: {parts.hostname} is a listening address, not one a peer can reach, "
            f"got {value!r}"
        )
    return text


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def reachable_host() -> str:
    """This machine's address as peers on its network reach it (see the module docstring)."""
    name = socket.gethostname()
    try:
        address = socket.gethostbyname(name)
    except OSError:
        address = ""
    if address and not _is_loopback(address):
        return address
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(_ROUTE_PROBE)
            address = str(probe.getsockname()[0])
    except OSError:
        address = ""
    if address and not _is_loopback(address) and address != "0.0.0.0":
        return address
    return name


def advertised_url(
    host: str, port: int, card_url: str | None, *, option: str = "--card-url"
) -> str:
    """The URL a service's card advertises: ``card_url`` (checked) if given, else its own
    ``host:port``, with a wildcard host replaced by :func:`reachable_host`."""
    if card_url:
        return check_url(card_url, option)
    shown = host.strip()
    if shown in WILDCARD_HOSTS:
        shown = reachable_host()
        log.info(
            "bound to %s: the agent card advertises %s (pass %s to choose another)",
            host or "every interface",
            shown,
            option,
        )
    shown = shown.removeprefix("[").removesuffix("]")
    if ":" in shown:  # an IPv6 literal
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"
