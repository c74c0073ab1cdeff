"""Participant URL routing: which URL the worker uses, from its process and from sandboxes.

Inside Amber a participant URL is a loopback address that only means something in the sender's
network namespace. When the gateway's proxy URL is known, a loopback participant URL is rebased
onto ``<proxy_url>/<role>`` (the gateway routes ``/<role>`` to that participant).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from green_agent.settings import GreenSettings
from worker.api import ParticipantEndpoint, is_loopback_host


def is_loopback_url(url: str) -> bool:
    """The URL's host is this machine as seen from the sender (loopback, or the unspecified
    address, which as a destination reaches this machine too)."""
    return is_loopback_host(urlsplit(url).hostname or "", unspecified=True)


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
