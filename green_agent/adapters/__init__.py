"""Worker adapters: HTTP (a real worker) or mock (no worker configured)."""

from __future__ import annotations

import logging

from green_agent.adapters.base import WorkerAdapter
from green_agent.settings import WORKER_SLOT_URL, WORKER_URL, GreenSettings

log = logging.getLogger(__name__)


def adapter_from_settings(settings: GreenSettings) -> WorkerAdapter:
    """``SKILLSBENCH_WORKER_URL``, else ``SKILLSBENCH_WORKER_SLOT_URL``, else the mock worker."""
    url = settings.effective_worker_url
    if url is None:
        from green_agent.adapters.mock import MockWorkerAdapter

        log.warning(
            "no worker configured (%s / %s): using the MOCK worker; its rows are never "
            "score-eligible",
            WORKER_URL,
            WORKER_SLOT_URL,
        )
        return MockWorkerAdapter()
    from green_agent.adapters.http import HttpWorkerAdapter

    source = WORKER_URL if settings.worker_url else WORKER_SLOT_URL
    log.info("worker: %s (from %s)", url, source)
    return HttpWorkerAdapter(
        url,
        token=settings.worker_token,
        poll_interval_sec=settings.worker_poll_interval_sec,
        timeout_sec=settings.worker_timeout_sec,
        retry_sec=settings.worker_retry_sec,
    )
