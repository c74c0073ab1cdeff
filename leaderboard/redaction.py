"""What may not appear in a public row: secrets, local paths, private or tokenized references.

The row model (``leaderboard.rows``) rejects values these predicates flag, the normalizer
(``leaderboard.normalize``) drops or replaces them, and the readiness checks report them, so all
three apply one set of rules.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

# Storage and internal schemes that point at private proof or worker-local state.
_PRIVATE_SCHEMES = frozenset(
    {"s3", "gs", "r2", "sandbox", "local", "file", "worker", "jobs", "internal"}
)
_LOCAL_NAMES = {"localhost", "host.docker.internal", "gateway.docker.internal", "kubernetes"}
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".lan", ".home.arpa")
_NUMERIC_LABEL = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")

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


def is_local_host(host: str) -> bool:
    """Loopback, private, link-local and local-only names (``host`` may carry a port): nothing
    outside the deployment can reach them."""
    if host.startswith("["):
        host = host[1 : host.index("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    host = host.lower().rstrip(".")
    if (
        host in _LOCAL_NAMES
        or host.endswith(_LOCAL_SUFFIXES)
        or ("." not in host and ":" not in host)
    ):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        # URL parsers read a host whose last label is a number (127.1, 0x7f.1) as an IPv4
        # address; no public DNS name ends in one.
        return bool(_NUMERIC_LABEL.match(host.rsplit(".", 1)[-1]))
    return not address.is_global


def artifact_ref_problems(ref: object) -> list[str]:
    """Why ``ref`` may not be a public artifact ref (empty when it may); the reasons never
    repeat the ref, which may hold a secret.

    A public ref is a ``sha256:`` content digest (it names bytes without saying where they are
    stored) or an ``https://`` URL on a public host with no user info, query string, fragment,
    ``..`` segment or credential-shaped text. Private storage schemes, paths and private or local
    hosts are refused: a public row must never point at storage the public cannot reach.
    """
    if not isinstance(ref, str) or not ref.strip():
        return ["an artifact ref must be a non-empty string"]
    if ref != ref.strip() or _CONTROL.search(ref) or any(c.isspace() or c == "\\" for c in ref):
        return ["contains whitespace, control characters or backslashes"]
    if DIGEST_PATTERN.match(ref):
        return []
    problems: list[str] = []
    try:
        parts = urlsplit(ref)
        host = parts.hostname
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return ["is not a well-formed URL"]
    scheme = parts.scheme.lower()
    if scheme in _PRIVATE_SCHEMES:
        problems.append(f"uses private or internal scheme {scheme}://")
    elif not scheme:
        problems.append("is a path, not a sha256: digest or public https:// URL")
    elif scheme != "https":
        problems.append("must be a sha256: digest or an https:// URL")
    elif not host:
        problems.append("names no host")
    elif is_local_host(host):
        problems.append("points at a private or local host")
    if "@" in parts.netloc:
        problems.append("carries user info")
    if parts.query or "?" in ref:
        problems.append("has a query string")
    if parts.fragment or "#" in ref:
        problems.append("has a fragment")
    if "/.." in parts.path:
        problems.append("climbs out of its path with '..'")
    if looks_secret(ref):
        problems.append("carries something shaped like a credential")
    return problems


def is_public_artifact_ref(value: str) -> bool:
    """A stable public reference (see ``artifact_ref_problems``)."""
    return not artifact_ref_problems(value)


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
