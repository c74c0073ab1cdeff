"""What may not appear in a public row: secrets, local paths, private or tokenized references.

The row model (``leaderboard.rows``) rejects values these predicates flag, and the normalizer
(``leaderboard.normalize``) drops or replaces them, so both apply one set of rules.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Storage and internal schemes that point at private proof or worker-local state.

_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Provider API keys: OpenAI/Anthropic style sk-..., GitHub tokens, Slack, Google, Hugging Face.
    re.compile(r"(?<![A-Za-z0-9])sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{30,}"),
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"),
    # AWS access key ids.
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16,}"),
    # Authorization headers and JSON web tokens.
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    # key=value credentials: password=..., api_key: ..., X-Amz-Signature=...
    re.compile(
        r"(?i)(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|access[_-]?key|auth|credential"
        r"|authorization|signature|sig|x-amz-[a-z-]+|session[_-]?id)[\"']?\s*[:=]\s*\S+"
    ),
)

# A path start after a separator: /abs, ~/home, ./rel, ../up, C:\win, \\server.
_LOCAL_PATH = re.compile(
    r"(?:^|[\s=:,;'\"(\[{<])(?:/|~(?:[A-Za-z0-9_.-]*)/|\.{1,2}/|[A-Za-z]:\\|\\\\)"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")  # owner of the digest shape
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def looks_secret(value: str) -> bool:
    """True when the text contains something shaped like a credential."""
    return any(pattern.search(value) for pattern in _SECRET_PATTERNS)


def has_local_path(value: str) -> bool:
    """True when the text contains an absolute, home-relative, dot-relative or Windows path."""
    return bool(_LOCAL_PATH.search(value)) or "\\" in value


def is_safe_label(value: str, *, max_length: int = 200) -> bool:
    """A short public label (category, tag, transport): no path, URL, secret or control chars.

    Slashes inside a word are allowed because published tags name repositories
    (``AgentOps-AI/agentops``); a slash that starts a path is not.
    """
    return (
        0 < len(value) <= max_length
        and value == value.strip()
        and not _CONTROL.search(value)
        and "://" not in value
        and "/.." not in value
        and not value.startswith((".", "~", "/"))
        and not has_local_path(value)
        and not looks_secret(value)
    )


def is_public_artifact_ref(value: str) -> bool:
    """A stable public reference: a content digest, or an https URL on a public host with no
    credentials, query string or fragment."""
    if not value or value != value.strip() or _CONTROL.search(value) or looks_secret(value):
        return False
    if DIGEST_PATTERN.match(value):
        return True
    if any(ch.isspace() for ch in value) or "\\" in value:
        return False
    try:
        parts = urlsplit(value)
        host = (parts.hostname or "").lower()
        port = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return False
    del port
    return (
        parts.scheme == "https"
        and bool(host)
        and host not in _LOOPBACK_HOSTS
        and "@" not in parts.netloc
        and "?" not in value
        and "#" not in value
        and not parts.query
        and not parts.fragment
        and "/.." not in parts.path
    )


def public_url(value: str) -> str | None:
    """The URL without credentials, query string and fragment; None if it is not http(s)."""
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    cleaned = f"{parts.scheme}://{netloc}{parts.path}"
    if looks_secret(cleaned) or _CONTROL.search(cleaned) or any(c.isspace() for c in cleaned):
        return None
    return cleaned
