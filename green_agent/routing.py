"""Participant URL routing: which URL the worker uses, from its process and from sandboxes.

Inside Amber a participant URL is a loopback address that only means something in the sender's
network namespace. When the gateway's proxy URL is known, a loopback participant URL is rebased
onto ``<proxy_url>/<role>`` (the gateway routes ``/<role>`` to that participant).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from green_agent.settings import GreenSettings
from worker.api import ParticipantEndpoint

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def rebase(base_url: str, role: str) -> str:
    return f"{base_url.rstrip('/')}/{role}"


def route_participant(role: str, url: str, settings: GreenSettings) -> ParticipantEndpoint:
    """The endpoint handed to the worker for one participant role."""
    loopback = is_loopback_url(url)
    to_use = rebase(settings.proxy_url, role) if loopback and settings.proxy_url else url
    if loopback and settings.worker_participant_proxy_url:
        to_use = rebase(settings.worker_participant_proxy_url, role)
    sandbox_url = None
    if loopback and settings.sandbox_participant_proxy_url:
        sandbox_url = rebase(settings.sandbox_participant_proxy_url, role)
    return ParticipantEndpoint(url=to_use, sandbox_url=sandbox_url)
