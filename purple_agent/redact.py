"""Keep secrets out of logs and replies: known secret values plus secret-looking patterns."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "[REDACTED]"
MIN_SECRET_LEN = 6  # shorter values are too likely to be ordinary words

_SECRET_NAME = re.compile(r"(API_KEY|_TOKEN|SECRET|PASSWORD|_KEY)$", re.IGNORECASE)
_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"),  # OpenAI / Anthropic style keys
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),  # Google API keys
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"\b(?:xox[abpr]|hf)_[A-Za-z0-9]{16,}"),  # Slack, Hugging Face
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-+/=]{12,}"),
    re.compile(
        r"(?i)((?:api[_-]?key|token|secret|password|authorization)[\"']?\s*[:=]\s*[\"']?)"
        r"[^\s\"',}]{6,}"
    ),
]


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look like secrets (``*_API_KEY``, ``*_TOKEN``…)."""
    env = os.environ if environ is None else environ
    return [v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LEN]


class Redactor:
    """Replaces known secret values, then secret-looking patterns, with :data:`MASK`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # longest first so a key that contains another is masked whole
        self._secrets = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_LEN}, key=len, reverse=True
        )

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        for pattern in _PATTERNS:
            text = pattern.sub(_keep_prefix, text)
        return text

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def _keep_prefix(match: re.Match[str]) -> str:
    return (match.group(1) if match.re.groups else "") + MASK


class RedactingFilter(logging.Filter):
    """Rewrites each record's final text (message, arguments and traceback) through a redactor."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redact = redactor
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._redact(record.getMessage())
        record.args = None
        if record.exc_info:
            record.exc_text = self._redact(self._formatter.formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True


def install_logging(redactor: Redactor, level: int = logging.INFO) -> logging.Handler:
    """One stderr handler on the root logger, redacting; other loggers propagate to it.

    uvicorn is run with ``log_config=None`` so its loggers go through this handler too.
    """
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(redactor))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "LiteLLM", "httpx"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    return handler
