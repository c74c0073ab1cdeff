"""The manifest's sandbox set-up between install and launch (BenchFlow's meaning of the keys):

- ``home_dirs``: folders under the agent user's home, created, filled from ``/root/<dir>`` when the
  user is not root (what ``install_cmd``, run as root, put there), and owned by the user;
- ``credential_files``: a file per entry whose ``env_source`` variable is set, written with that
  value (through ``template``'s ``{value}`` when given) at ``path`` (``{home}`` = the user's
  home), mode 0600, owned by the user, like the folders made for it under the home (0755
  elsewhere). The value travels on stdin, never in a command line;
- ``skill_paths`` (``$HOME/…`` or ``$WORKSPACE/…``): a link to the task's skills folder, when
  the trial placed one, so the agent finds the skills where it looks by itself.

Everything runs as root and hands ownership to ``[agent].user``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from worker.acp.agent_manifest import AgentManifest
from worker.sandbox.base import Sandbox

SETUP_TIMEOUT_SEC = 60.0

# $1 = path, $2 = owner ("" = leave it), $3.. = the folders under the home to hand to the owner;
# the content comes on stdin. Folders are made 0755 (the owner must reach its file), the file 0600.
_WRITE_SECRET = (
    'f=$1 o=$2 && shift 2 && d=${f%/*} && umask 022 && mkdir -p -- "${d:-/}"'
    ' && { [ -z "$o" ] || [ "$#" -eq 0 ] || chown -h "$o" "$@"; }'
    ' && umask 077 && cat > "$f" && chmod 600 "$f" && { [ -z "$o" ] || chown "$o" "$f"; }'
)


class ProvisionError(RuntimeError):
    """A set-up step failed; the message names it (never a secret value)."""


async def provision(
    sandbox: Sandbox,
    manifest: AgentManifest,
    env: Mapping[str, str],
    *,
    user: str | None,
    skills_dir: str | None,
) -> list[str]:
    """Apply the manifest's home, credential and skill keys; returns what was done, for the log."""
    if not (manifest.home_dirs or manifest.credential_files or manifest.skill_paths):
        return []
    home = await _home(sandbox, user)
    owner = user if user not in (None, "root", "0", "0:0") else ""
    done: list[str] = []
    script = []
    for rel in manifest.home_dirs:
        target = shlex.quote(f"{home}/{rel}")
        script.append(f"mkdir -p {target}")
        if owner and home != "/root":
            script.append(
                f"if [ -d /root/{shlex.quote(rel)} ]; then cp -a /root/{shlex.quote(rel)}/. {target}/; fi"
            )
        if owner:
            script.append(f"chown -R {shlex.quote(owner)} {target}")
        done.append(f"home dir {home}/{rel}")
    if skills_dir:
        for raw in manifest.skill_paths:
            path = raw.replace("$HOME", home, 1).replace("$WORKSPACE", sandbox.workdir, 1)
            link, source = shlex.quote(path), shlex.quote(skills_dir)
            script.append(
                f'mkdir -p "$(dirname -- {link})" && '
                f"if [ -d {link} ] && [ ! -L {link} ]; then cp -a {source}/. {link}/; "
                f"else ln -sfn {source} {link}; fi"
            )
            if owner:  # the link and the folders made for it under the home
                made = _between(home, path) if raw.startswith("$HOME/") else []
                targets = " ".join(shlex.quote(p) for p in [*made, path])
                script.append(f"chown -h {shlex.quote(owner)} {targets}")
            done.append(f"skills at {path}")
    if script:
        await _run_as_root(sandbox, " && ".join(script), "home dirs and skill paths")
    for entry in manifest.credential_files:
        value = env.get(entry.env_source)
        if not value:
            continue
        path = entry.path.replace("{home}", home)
        content = entry.template.format(value=value) if entry.template else value
        folders = _between(home, path) if path.startswith(home + "/") else []
        result = await sandbox.exec(
            ["sh", "-c", _WRITE_SECRET, "sh", path, owner, *folders],
            user="root",
            stdin=content.encode(),
            timeout_sec=SETUP_TIMEOUT_SEC,
        )
        if result.exit_code != 0:
            raise ProvisionError(f"credential file {path}: {_last_line(result.stderr)}")
        done.append(f"credential file {path} (from {entry.env_source})")
    return done


async def _home(sandbox: Sandbox, user: str | None) -> str:
    result = await sandbox.exec(
        ["sh", "-c", 'printf %s "$HOME"'], user=user, timeout_sec=SETUP_TIMEOUT_SEC
    )
    home = result.stdout.strip().rstrip("/") or result.stdout.strip()
    if result.exit_code != 0 or not home.startswith("/"):
        raise ProvisionError(f"cannot tell the agent user's home: {_last_line(result.stderr)}")
    return home


async def _run_as_root(sandbox: Sandbox, script: str, what: str) -> None:
    result = await sandbox.exec(["sh", "-c", script], user="root", timeout_sec=SETUP_TIMEOUT_SEC)
    if result.exit_code != 0:
        raise ProvisionError(f"{what}: {_last_line(result.stderr)}")


def _between(home: str, path: str) -> list[str]:
    """The folders strictly between ``home`` and ``path``."""
    parts = path.removeprefix(home + "/").split("/")[:-1]
    return [f"{home}/{'/'.join(parts[: i + 1])}" for i in range(len(parts))]


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "failed"
