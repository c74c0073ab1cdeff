"""A trial's trace as OTLP/JSON (an ``ExportTraceServiceRequest``), written to
``trajectory/otel-spans.json`` and sent to ``OTEL_EXPORTER_OTLP_ENDPOINT`` when it is set.

Written by hand (no OpenTelemetry SDK): the JSON mapping of OTLP uses lowerCamelCase keys, hex
trace and span ids, nanosecond times as decimal strings and attributes as ``AnyValue`` pairs.
The SDK does not fit (yet): its stable OTLP/HTTP exporter sends protobuf, not the JSON document
kept on disk (the JSON exporters are 0.x pre-releases), and these spans are assembled after the
trial from its records, under a trace id derived from the trial id.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

log = logging.getLogger(__name__)

OTEL_SPANS_FILE: Final = "trajectory/otel-spans.json"
SCOPE_NAME: Final = "skillsbench_agentbeats.worker"
SCOPE_VERSION: Final = "0.1.0"
SPAN_KIND_INTERNAL: Final = 1
SPAN_KIND_CLIENT: Final = 3
STATUS_UNSET: Final = 0
STATUS_OK: Final = 1
STATUS_ERROR: Final = 2


def new_span_id() -> str:
    return secrets.token_hex(8)


def trace_id_for(trial_id: str) -> str:
    """A stable 16-byte trace id per trial (the same trial always has the same trace)."""
    return hashlib.sha256(trial_id.encode()).hexdigest()[:32]


@dataclass
class Span:
    name: str
    start_ns: int
    end_ns: int
    span_id: str = field(default_factory=new_span_id)
    parent_span_id: str | None = None
    kind: int = SPAN_KIND_INTERNAL
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def otlp(self, trace_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start_ns),
            "endTimeUnixNano": str(max(self.end_ns, self.start_ns)),
            "attributes": attributes(self.attributes),
            "status": (
                {"code": STATUS_ERROR, "message": self.error} if self.error else {"code": STATUS_OK}
            ),
        }
        if self.parent_span_id:
            doc["parentSpanId"] = self.parent_span_id
        return doc


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a string in OTLP/JSON
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": attributes(value)}}
    return {"stringValue": "" if value is None else str(value)}


def attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": str(k), "value": any_value(v)} for k, v in values.items() if v is not None]


def trace_document(
    spans: Sequence[Span], trace_id: str, resource: Mapping[str, Any]
) -> dict[str, Any]:
    """The ExportTraceServiceRequest holding one trial's spans."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": SCOPE_NAME, "version": SCOPE_VERSION},
                        "spans": [span.otlp(trace_id) for span in spans],
                    }
                ],
            }
        ]
    }


def traces_url(environ: Mapping[str, str] | None = None) -> str | None:
    """Where to send traces: the signal-specific variable as is, else ``<endpoint>/v1/traces``."""
    env = os.environ if environ is None else environ
    specific = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if specific:
        return specific
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return f"{base.rstrip('/')}/v1/traces" if base else None


def export_headers(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    headers = {"content-type": "application/json"}
    raw = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS", "")
    for pair in raw.split(","):
        name, sep, value = pair.partition("=")
        if sep and name.strip():
            headers[name.strip().lower()] = value.strip()
    return headers


async def export(document: dict[str, Any], *, timeout_sec: float = 10.0) -> str | None:
    """POST the trace when an endpoint is configured; returns what went wrong, or None.

    A collector that is down must not fail the trial: the file on disk is the record.
    """
    url = traces_url()
    if url is None:
        return None
    try:
        async with httpx.AsyncClient(timeout=timeout_sec) as client:
            response = await client.post(
                url, content=json.dumps(document).encode(), headers=export_headers()
            )
        if response.status_code >= 300:
            return f"OTLP export to {url}: HTTP {response.status_code}"
    except httpx.HTTPError as exc:
        return f"OTLP export to {url}: {type(exc).__name__}: {exc}"
    return None
