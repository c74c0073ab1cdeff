"""The tampering rules on change lists, against a small file tree standing in for a container
(the docker probes in tests/worker/trial/test_tamper_probes.py run them on real containers)."""

from __future__ import annotations

import posixpath

from worker.sandbox.tamper import Change, ChangeKind, PathStat, find_tampering


class Tree:
    """Files (path -> content), folders and links (path -> target) of a Debian-like image with
    usrmerge: /bin, /sbin, /lib are links into /usr."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.links = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib"}
        self.files = files
        self.dirs = {"/"} | {
            posixpath.dirname(p) for p in files for _ in [0] if posixpath.dirname(p)
        }
        for path in list(self.dirs):
            while path != "/":
                path = posixpath.dirname(path)
                self.dirs.add(path)

    def _resolve_parent(self, path: str) -> str:
        parent, name = posixpath.split(path)
        if parent == "/":
            return path
        parent = self._resolve_parent(parent)
        if parent in self.links:
            parent = posixpath.join(posixpath.dirname(parent), self.links[parent])
        return posixpath.join(parent, name)

    def stat(self, path: str) -> PathStat | None:
        real = self._resolve_parent(path)
        if real in self.links:
            return PathStat(is_dir=False, link_target=self.links[real])
        if real in self.dirs:
            return PathStat(is_dir=True)
        return PathStat(is_dir=False) if real in self.files else None

    def head(self, path: str, limit: int) -> bytes | None:
        content = self.files.get(self._resolve_parent(path))
        return None if content is None else content[:limit]


def changes(*items: tuple[ChangeKind, str]) -> list[Change]:
    return [Change(path, kind) for kind, path in items]


def flagged(tree: Tree, items: list[Change]) -> dict[str, str]:
    return {t.path: t.reason for t in find_tampering(items, tree)}


IMAGE = {
    "/usr/bin/python3": b"elf",
    "/usr/bin/bash": b"elf",
    "/usr/lib/x86_64-linux-gnu/libm.so.6": b"elf",
    "/usr/lib/python3.11/os.py": b"",
    "/usr/local/lib/python3.11/site-packages/numpy/__init__.py": b"",
}


def test_a_new_program_module_or_library_of_a_new_name_is_no_evidence() -> None:
    tree = Tree(
        IMAGE
        | {
            "/usr/local/bin/answer-tool": b"#!/bin/sh",
            "/usr/bin/newtool": b"elf",
            "/usr/local/lib/python3.11/site-packages/answerlib/__init__.py": b"",
            "/usr/local/lib/python3.11/site-packages/paths.pth": b"/opt/extra\n",
            "/usr/lib/x86_64-linux-gnu/libnew.so.1": b"elf",
            "/root/.local/lib/python3.11/site-packages/answerlib2.py": b"",
        }
    )
    items = changes(
        ("modified", "/usr"),
        ("modified", "/usr/local/bin"),
        ("added", "/usr/local/bin/answer-tool"),
        ("modified", "/usr/bin"),
        ("added", "/usr/bin/newtool"),  # /bin is /usr/bin: not a later PATH folder of its own
        ("added", "/usr/local/lib/python3.11/site-packages/answerlib"),
        ("added", "/usr/local/lib/python3.11/site-packages/answerlib/__init__.py"),
        ("added", "/usr/local/lib/python3.11/site-packages/paths.pth"),
        ("added", "/usr/lib/x86_64-linux-gnu/libnew.so.1"),
        ("added", "/usr/lib/python3.11/__pycache__"),
        ("added", "/usr/lib/python3.11/__pycache__/os.cpython-311.pyc"),
        ("modified", "/root"),
        ("added", "/root/answer.txt"),
        ("added", "/root/.local/lib/python3.11/site-packages/answerlib2.py"),
        ("modified", "/usr/lib/python3.11"),  # a folder, though nothing in it is listed
    )
    assert flagged(tree, items) == {}


def test_each_change_to_what_the_verifier_runs_is_evidence() -> None:
    tree = Tree(
        IMAGE
        | {
            "/usr/local/sbin/python3": b"#!/bin/sh",
            "/usr/local/lib/python3.11/site-packages/zz.pth": b"# x\nimport os\n",
            "/usr/local/lib/libm.so.6": b"evil",
            "/usr/lib/python3.11/pytest.py": b"",
            "/etc/ld.so.preload": b"/tmp/x.so",
            "/root/.local/lib/python3.11/site-packages/numpy/__init__.py": b"",
        }
    )
    items = changes(
        ("modified", "/usr/bin/bash"),
        ("deleted", "/usr/lib/python3.11/os.py"),
        ("added", "/usr/local/sbin"),
        ("added", "/usr/local/sbin/python3"),
        ("added", "/usr/local/lib/python3.11/site-packages/zz.pth"),
        ("added", "/usr/local/lib/libm.so.6"),
        ("added", "/usr/lib/python3.11/pytest.py"),
        ("added", "/etc/ld.so.preload"),
        ("added", "/usr/local/lib/python3.11/site-packages/sitecustomize.py"),
        ("added", "/root/.local/lib/python3.11/site-packages/numpy"),
    )
    found = flagged(tree, items)
    assert set(found) == {c.path for c in items} - {"/usr/local/sbin"}, found
    assert found["/usr/local/sbin/python3"] == "shadows /usr/bin/python3 on the verifier's PATH"


def test_a_link_in_place_of_a_home_search_folder_is_flagged() -> None:
    """/root/.local/bin (or /root/.local, or the user site) made a link to an unwatched folder
    would hide a shadowing program or module there; a program link inside the folder (pipx's)
    is judged by its name like any other new program."""
    tree = Tree(dict(IMAGE))
    for path in ("/root/.local", "/root/.local/bin", "/root/bin", "/root/.local/lib/python3.11"):
        tree.links[path] = "/tmp/elsewhere"
        assert path in flagged(tree, changes(("added", path))), path
        del tree.links[path]
    tree.links["/root/.local/bin/mytool"] = "/opt/mytool/bin/mytool"
    assert flagged(tree, changes(("added", "/root/.local/bin/mytool"))) == {}
    tree.links["/root/.local/share"] = "/tmp/share"  # not where programs are searched
    assert flagged(tree, changes(("added", "/root/.local/share"))) == {}


def test_a_pth_hook_whose_name_is_not_utf8_is_tampering_however_it_is_listed() -> None:
    """From a walk of the layer (lone surrogates) or from the engine (U+FFFD, its content not
    reachable by that name): flagged either way; the evidence is valid UTF-8."""
    site = "/usr/local/lib/python3.11/site-packages"
    tree = Tree({f"{site}/ok.py": b""})
    for odd in (b"zz\xff.pth".decode("utf-8", "surrogateescape"), "zz\ufffd.pth"):
        found = find_tampering([Change(f"{site}/{odd}", "added")], tree)
        assert [t.reason for t in found] == [
            "a Python .pth file whose name is not UTF-8 (runs at every start)"
        ]
        assert found[0].as_dict()["path"] == f"{site}/zz\ufffd.pth"
        found[0].as_dict()["path"].encode("utf-8")


def test_an_apt_install_of_a_new_library_is_not_evidence() -> None:
    """energy-ac-optimal-power-flow's oracle runs `apt-get install libgfortran5`: dpkg's
    libc-bin trigger reruns ldconfig, which rewrites /etc/ld.so.cache. A new library under a
    new name and the regenerated cache are no tampering (the work product rule grades a pass
    again on the image's cache); the loader's own configuration still is."""
    lib = "/usr/lib/x86_64-linux-gnu"
    tree = Tree(
        IMAGE
        | {
            "/etc/ld.so.cache": b"ld.so-1.7.0",
            f"{lib}/libgfortran.so.5.0.0": b"elf",
            f"{lib}/libgfortran.so.5": b"elf",
            "/usr/share/doc/libgfortran5/copyright": b"",
            "/etc/ld.so.preload": b"/tmp/x.so",
        }
    )
    installed = changes(
        ("modified", "/etc/ld.so.cache"),
        ("modified", lib),
        ("added", f"{lib}/libgfortran.so.5.0.0"),
        ("added", f"{lib}/libgfortran.so.5"),
        ("added", "/usr/share/doc/libgfortran5"),
        ("added", "/usr/share/doc/libgfortran5/copyright"),
    )
    assert flagged(tree, installed) == {}
    preload = flagged(tree, [*installed, Change("/etc/ld.so.preload", "added")])
    assert set(preload) == {"/etc/ld.so.preload"}


def test_an_environment_the_agent_made_under_opt_keeps_its_own_start_up_files() -> None:
    """A task may ask for a virtual environment (red team 8's honest venv): ``python3 -m venv``
    on 3.11 seeds setuptools, whose ``distutils-precedence.pth`` has an import line. In an
    environment the agent made it is no evidence (the verifier runs that environment only where
    test.sh does); in the image's environment, or one whose bin the verifier's PATH names, it
    is."""
    pth = b"import os; var = 'SETUPTOOLS_USE_DISTUTILS'\n"
    site = "lib/python3.11/site-packages"
    tree = Tree(
        IMAGE
        | {
            "/opt/venv/pyvenv.cfg": b"home = /usr/bin\n",
            f"/opt/venv/{site}/distutils-precedence.pth": pth,
            "/opt/conda/conda-meta/history": b"",
            f"/opt/conda/{site}/hook.pth": pth,
        }
    )
    made = changes(
        ("added", "/opt/venv"),
        ("added", "/opt/venv/pyvenv.cfg"),
        ("added", f"/opt/venv/{site}/distutils-precedence.pth"),
    )
    assert flagged(tree, made) == {}
    on_path = {t.path for t in find_tampering(made, tree, path="/opt/venv/bin:/usr/bin")}
    assert on_path == {f"/opt/venv/{site}/distutils-precedence.pth"}
    images = changes(("added", f"/opt/conda/{site}/hook.pth"))
    assert set(flagged(tree, images)) == {f"/opt/conda/{site}/hook.pth"}
