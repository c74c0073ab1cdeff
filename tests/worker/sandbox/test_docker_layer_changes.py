"""The container's changes read from its writable layer (worker/sandbox/_docker/layer.py) are
what the engine's own ``docker diff`` lists: on a real container after a hostile agent's kinds of change,
and on hand-made layer folders (whiteouts and opaque folders of both overlay flavours), so the
rules hold where no Docker Engine answers."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from worker.sandbox._docker.changes import container_changes, container_layers
from worker.sandbox._docker.layer import Layers, empty_folder, layer_changes, layers_of


def _tree(root: Path, files: dict[str, str | None]) -> None:
    """``files``: path -> text (a file), None (a folder)."""
    for rel, text in files.items():
        path = root / rel
        if text is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def _kinds(layers: Layers) -> set[tuple[str, str]]:
    return {(c.path, c.kind) for c in layer_changes(layers)}


def test_hand_made_layers(tmp_path: Path) -> None:
    base, mid, upper = tmp_path / "base", tmp_path / "mid", tmp_path / "upper"
    _tree(
        base,
        {
            "usr/bin/python3": "py",
            "usr/bin/ls": "ls",
            "usr/lib/mod/a.py": "a",
            "usr/lib/mod/sub/b.py": "b",
            "usr/lib/old/c.py": "c",
            "etc/passwd": "root",
        },
    )
    _tree(mid, {"usr/share/doc/readme": "r"})
    os.symlink("usr/lib", base / "lib")  # merged /usr: /lib is a link in the image
    _tree(
        upper,
        {
            "logs/agent": None,
            "usr/bin/python3": "fake",  # replaced
            "usr/bin/newtool": "new",  # added
            "usr/lib/mod/sub/b.py": "b2",  # under a folder made anew (marker file below)
            "usr/lib/old": None,  # made anew (xattr-less overlayfs marker)
            "lib/x86_64-linux-gnu/libm.so.6": "lib",  # the /lib link replaced by a folder
            "deep/" + "/".join(["d"] * 300) + "/f": "x",  # deeper than a recursion would go
        },
    )
    (upper / "usr/lib/mod/.wh..opq").write_text("")  # fuse-overlayfs's opaque marker
    (upper / "usr/lib/old/.wh..wh..opq").write_text("")
    (upper / "usr/bin/.wh.ls").write_text("")  # a whiteout file
    (upper / "usr/share").mkdir(parents=True)
    (upper / "usr/share/.wh.doc").write_text("")
    found = _kinds(Layers(upper, (mid, base)))
    assert {
        ("/usr/bin/python3", "modified"),
        ("/usr/bin/newtool", "added"),
        ("/usr/bin/ls", "deleted"),
        ("/usr/share/doc", "deleted"),
        ("/usr/lib/mod", "modified"),
        ("/usr/lib/mod/a.py", "deleted"),  # hidden by the folder made anew
        ("/usr/lib/mod/sub", "modified"),
        ("/usr/lib/mod/sub/b.py", "modified"),
        ("/usr/lib/old/c.py", "deleted"),
        ("/lib", "modified"),
        ("/lib/x86_64-linux-gnu", "added"),  # the image has no real folder there
        ("/lib/x86_64-linux-gnu/libm.so.6", "added"),
        ("/logs", "added"),
    } <= found
    assert ("/etc/passwd", "deleted") not in found  # untouched
    assert not any(".wh." in path or path.endswith(".opq") for path, _ in found)
    assert len([p for p, _ in found if p.startswith("/deep/")]) == 301  # 300 folders and the file


def test_an_empty_folder_only_when_certain(tmp_path: Path) -> None:
    lower, upper = tmp_path / "lower", tmp_path / "upper"
    _tree(lower, {"logs/kept/old.txt": "image", "logs/hidden/old.txt": "image"})
    _tree(
        upper,
        {
            "logs/agent": None,
            "logs/full/f.txt": "x",
            "logs/kept": None,
            "logs/hidden": None,
            "logs/gone": None,
            "elsewhere": None,
        },
    )
    (upper / "logs/hidden/.wh..opq").write_text("")  # made anew: the image's file is hidden
    (upper / "logs/gone/.wh.x").write_text("")  # a whiteout: let the engine say
    os.symlink("/elsewhere", upper / "logs/link")
    layers = Layers(upper, (lower,))
    assert empty_folder(layers, "/logs/agent")
    assert empty_folder(layers, "/logs/hidden")
    for path in ("/logs/full", "/logs/kept", "/logs/gone", "/logs/link", "/logs/none", "/"):
        assert not empty_folder(layers, path), path
    (upper / "logs/agent/late.txt").write_text("x")
    assert not empty_folder(layers, "/logs/agent")


def test_a_layer_that_is_not_the_containers_is_not_read(tmp_path: Path) -> None:
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    upper.mkdir()
    lower.mkdir()
    inspect = {
        "GraphDriver": {
            "Name": "overlay2",
            "Data": {"UpperDir": str(upper), "LowerDir": str(lower)},
        }
    }
    assert layers_of(inspect) is None  # no logs folder: not a container our setup wrote
    (upper / "logs").mkdir()
    assert layers_of(inspect) is not None
    assert layers_of({**inspect, "GraphDriver": {**inspect["GraphDriver"], "Name": "vfs"}}) is None
    gone = {
        "GraphDriver": {"Name": "overlay2", "Data": {"UpperDir": str(upper), "LowerDir": "/nope"}}
    }
    assert layers_of(gone) is None


# What a hostile or a careless agent does to a container, each kind of change once.
CHANGES = """\
mkdir -p /logs/agent
echo x > /usr/bin/python3.11
printf '\\0' >> "$(ls /usr/lib/x86_64-linux-gnu/libm.so.6 /usr/lib/aarch64-linux-gnu/libm.so.6 \
  2>/dev/null | head -n 1)"
rm -f /bin/ls /etc/passwd
mkdir -p /usr/local/sbin && echo z > /usr/local/sbin/python3
echo /x > /etc/ld.so.preload
ln -sf /tmp/f /bin/sh
mkdir -p /root/.local/bin && touch /root/.local/bin/bash
rm -rf /usr/lib/python3.11/email && mkdir -p /usr/lib/python3.11/email/mime
echo q > /usr/lib/python3.11/email/mime/text.py
touch /usr/lib/python3.11/tmpfile && rm /usr/lib/python3.11/tmpfile
mv /usr/lib/python3.11/xml /tmp/xml && mkdir /usr/lib/python3.11/xml
rm -rf /usr/lib/python3.11/json
rm -rf /usr/share/zoneinfo/Europe && echo f > /usr/share/zoneinfo/Europe
rm -f /usr/bin/yes && mkdir -p /usr/bin/yes/x
ln /usr/bin/tail /usr/bin/tail2
ln -s /x /usr/bin/newlink
rm -rf /var/lib && mkdir -p /var/lib/dpkg && touch /var/lib/dpkg/status
"""


@pytest.mark.docker
def test_layer_changes_are_the_engines_diff(docker_client: Any) -> None:
    from tests.support.docker_images import ensure_test_image

    image = ensure_test_image(docker_client, "python")
    container = docker_client.containers.run(
        image,
        ["sleep", "600"],
        entrypoint=[],
        detach=True,
        network_mode="none",
        name=f"skillsbench-layer-test-{uuid.uuid4().hex[:8]}",
    )
    try:
        done = container.exec_run(["sh", "-c", CHANGES])
        assert done.exit_code == 0, done.output
        layers = container_layers(docker_client, container.id)
        if layers is None:
            pytest.skip(
                "the container's layer is not readable here (not root, or no overlay driver)"
            )
        from_layer = {(c.path, c.kind) for c in layer_changes(layers)}
        from_engine = {(c.path, c.kind) for c in container_changes(docker_client, container.id)}
        # Everything the engine lists; more only where the engine's walk (fuse-overlayfs here)
        # now and then missed what a folder made anew hides: the container's shell sees none.
        assert from_engine <= from_layer, from_engine - from_layer
        extra = from_layer - from_engine
        assert all(kind == "deleted" for _, kind in extra), extra
        for path, _ in extra:  # hidden by a folder made anew (the engine lists them mostly)
            parent = layers.upper / path.lstrip("/").rsplit("/", 1)[0]
            assert {".wh..opq", ".wh..wh..opq"} & set(os.listdir(parent)), path
        assert ("/usr/lib/python3.11/xml/__init__.py", "deleted") in from_layer
        assert ("/usr/bin/python3.11", "modified") in from_layer
        assert ("/etc/ld.so.preload", "added") in from_layer
        assert empty_folder(layers, "/logs/agent") and not empty_folder(layers, "/usr/bin")
        with_layers = container_changes(docker_client, container.id, layers)
        assert {(c.path, c.kind) for c in with_layers} == from_layer
    finally:
        container.remove(force=True)
