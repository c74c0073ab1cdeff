"""Rules for private proof storage URIs.

Private proof must live somewhere durable and access-controlled (``s3://``, ``gs://``, ``r2://``,
``https://``) and the recorded prefix must never carry a credential: no query strings, fragments,
presigned signatures or user info. Public ``artifact_refs`` follow the public row contract
instead (``leaderboard.rows.artifact_ref_problems``).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from leaderboard.rows import is_local_host

DURABLE_SCHEMES = ("s3", "gs", "r2", "https")
_LOCAL_SCHEMES = {"file", "local", "sandbox", "worker", "jobs"}
_PRESIGNED = re.compile(
    r"x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)"
    r"|googleaccessid|[?&;](?:sig|signature|se|sp|sv|st|skoid|expires)=",
    re.IGNORECASE,
)
_CREDENTIAL_WORDS = re.compile(
    r"(?:^|[^a-z])(?:token|access[_-]?token|api[_-]?key|apikey|access[_-]?key|secret|password|"
    r"passwd|credential|credentials|auth|authorization|bearer|session[_-]?token)\s*[=:]",
    re.IGNORECASE,
)

Problem = tuple[str, str]


def _credential_problems(uri: str) -> list[Problem]:
    parts = urlsplit(uri)
    problems: list[Problem] = []
    if _PRESIGNED.search(uri):
        problems.append(("storage_presigned", f"{uri!r} looks presigned or tokenized"))
    if parts.username is not None or parts.password is not None:
        problems.append(("storage_credentials", f"{uri!r} carries user info"))
    elif _CREDENTIAL_WORDS.search(unquote(parts.path)):
        problems.append(("storage_credentials", f"{uri!r} carries a credential-like parameter"))
    return problems


def private_storage_problems(uri: str) -> list[Problem]:
    """Every way ``uri`` fails the durable private proof storage rules."""
    if not isinstance(uri, str) or not uri.strip():
        return [("storage_local_path", "the private proof storage is empty")]
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if not scheme or len(scheme) == 1:  # "C:\\..." is a path, not a scheme
        return [("storage_local_path", f"{uri!r} is a worker-local path, not durable storage")]
    if scheme in _LOCAL_SCHEMES:
        return [("storage_local_path", f"{uri!r} is worker-local ({scheme}://) storage")]
    problems: list[Problem] = []
    if scheme not in DURABLE_SCHEMES:
        problems.append(
            (
                "storage_scheme",
                f"{uri!r} uses {scheme}://; durable private storage is one of "
                + ", ".join(f"{s}://" for s in DURABLE_SCHEMES),
            )
        )
    if parts.query or "?" in uri:
        problems.append(("storage_query", f"{uri!r} has a query string"))
    if parts.fragment or "#" in uri:
        problems.append(("storage_fragment", f"{uri!r} has a fragment"))
    problems.extend(_credential_problems(uri))
    if not parts.hostname:
        problems.append(("storage_missing_bucket", f"{uri!r} names no bucket or host"))
    elif scheme == "https" and is_local_host(parts.netloc.rsplit("@", 1)[-1]):
        problems.append(("storage_local_path", f"{uri!r} points at a local host"))
    return problems


def is_under_prefix(uri: str, prefix: str) -> bool:
    base = prefix if prefix.endswith("/") else prefix + "/"
    return uri.startswith(base) and ".." not in uri[len(base) :].split("/")
