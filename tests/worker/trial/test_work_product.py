"""The work product rule (worker/trial/work_product.py) on change lists: what the verifier's toolchain
reads by itself comes from the image; the places real SkillsBench oracles write stay the
agent's work (research: the 87 public tasks, docs/sandboxes.md "Work product")."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from worker.sandbox.tamper import Change
from worker.trial.work_product import (
    Ground,
    ModuleEntry,
    WorkProduct,
    builds_node_project,
    builds_project,
    classify,
    exclude_site_packages,
    exclude_test_time_shadows,
    file_names,
    image_input_dirs,
    image_module_hits,
    image_module_queries,
    image_module_script,
    image_python_paths,
    input_dirs,
    installed_modules,
    is_verifier_output,
    link_escapes,
    linked_folder_rules,
    module_paths,
    names_of_tests,
    node_scope,
    node_script_folders,
    node_shadow_queries,
    pycache_isolated,
    references,
    script_folders,
    shadow_candidates,
    shell_references,
    site_packages,
    skill_places,
    start_folders,
    unnamed_candidates,
    unreached_modules,
    unreached_site_packages,
    verifier_outputs,
)

ROOT = Ground(workdir="/root", skills_dir="/root/.claude/skills")
APP = Ground(workdir="/app", image_modules=frozenset({"numpy", "requests"}))


def _rule(ground: Ground, *changes: Change) -> dict[str, str | None]:
    product = classify(list(changes), ground)
    rules: dict[str, str | None] = {c.path: None for c in product.applied}
    rules.update({e.path: e.rule for e in product.excluded})
    return rules


# Implicit inputs of the tools the real verifier shapes run (uvx after curl|sh and apt-get;
# pip3 install + python3 -m pytest; uv init/add/run), plus git, node/npm, java/maven, the shell.
IMPLICIT = [
    # apt / dpkg
    ("/etc/apt/apt.conf.d/99hook", "added", "system"),
    ("/var/lib/dpkg/info/curl.postinst", "added", "system"),
    ("/var/cache/apt/archives/curl_8.0_amd64.deb", "added", "system"),
    ("/var/lib/apt/lists/fake_Packages", "added", "system"),
    # curl / wget / netrc
    ("/root/.curlrc", "added", "home-config"),
    ("/root/.config/curlrc", "added", "home-config"),
    ("/root/.wgetrc", "added", "home-config"),
    ("/etc/wgetrc", "modified", "system"),
    ("/root/.netrc", "added", "home-config"),
    # uv / uvx
    ("/root/.config/uv/uv.toml", "added", "home-config"),
    ("/etc/xdg/uv/uv.toml", "added", "system"),
    ("/root/.cache/uv/archive-v0/x/pytest/__init__.py", "added", "home-config"),
    ("/root/.local/bin/uvx", "added", "home-config"),
    ("/root/.local/share/uv/python/cpython-3.12/bin/python3", "added", "home-config"),
    ("/root/uv.toml", "added", "ground-config"),
    ("/root/pyproject.toml", "added", "ground-config"),
    ("/root/.python-version", "added", "home-config"),
    ("/root/.venv/lib/python3.12/site-packages/pytest/__init__.py", "added", "home-config"),
    ("/root/uv.lock", "added", "ground-config"),
    # pip
    ("/usr/local/pip.conf", "added", "system"),
    ("/root/.config/pip/pip.conf", "added", "home-config"),
    ("/root/.pip/pip.conf", "added", "home-config"),
    ("/usr/local/lib/python3.11/site-packages/pytest/__init__.py", "added", "system"),
    ("/usr/lib/python3/dist-packages/_pytest_fake.pth", "added", "system"),
    # python / pytest from the working directory and its parents
    ("/root/pytest/__init__.py", "added", "ground-module"),
    ("/root/pytest.py", "added", "ground-module"),
    ("/root/_pytest", "added", "ground-module"),
    ("/root/json.py", "added", "ground-module"),
    ("/root/pytest.ini", "added", "ground-config"),
    ("/root/.pytest.ini", "added", "home-config"),
    ("/root/pytest.toml", "added", "ground-config"),
    ("/root/.pytest.toml", "added", "home-config"),
    ("/root/tox.ini", "added", "ground-config"),
    ("/root/setup.cfg", "added", "ground-config"),
    ("/root/conftest.py", "added", "ground-config"),
    ("/conftest.py", "added", "ground-config"),
    ("/pytest.ini", "added", "ground-config"),
    ("/pyproject.toml", "added", "ground-config"),
    ("/root/.local/lib/python3.11/site-packages/x.pth", "added", "home-config"),
    # git
    ("/root/.gitconfig", "added", "home-config"),
    ("/etc/gitconfig", "added", "system"),
    ("/root/.git/hooks/pre-commit", "added", "home-config"),
    ("/app/.git/config", "modified", "ground-config"),
    ("/app/.pytest.ini", "added", "ground-config"),
    ("/app/pytest/__init__.py", "added", "ground-module"),
    # node / npm
    ("/root/.npmrc", "added", "home-config"),
    ("/root/node_modules/chai/index.js", "added", "ground-config"),
    # node's package scope: a bare import of its "name" resolves through its "exports"
    ("/root/package.json", "modified", "ground-config"),
    ("/package.json", "added", "ground-config"),
    ("/node_modules/chai/index.js", "added", "ground-config"),
    ("/usr/lib/node_modules/npm/bin/npm-cli.js", "modified", "system"),
    # java / maven
    ("/root/.m2/settings.xml", "added", "home-config"),
    ("/app/.mvn/maven.config", "added", "ground-config"),
    ("/root/.mavenrc", "added", "home-config"),
    ("/etc/mavenrc", "added", "system"),
    ("/root/.mvn/maven.config", "added", "home-config"),
    ("/opt/java/lib/modules", "modified", "toolchain"),
    # the shell
    ("/root/.bashrc", "modified", "home-config"),
    ("/root/.profile", "added", "home-config"),
    ("/etc/profile.d/x.sh", "added", "system"),
    ("/etc/bash.bashrc", "modified", "system"),
    ("/usr/local/bin/curl", "added", "system"),
    # an image's conda prefix under /opt
    ("/opt/conda/lib/python3.11/site-packages/pytest/__init__.py", "modified", "toolchain"),
    ("/opt/conda/lib/python3.11/site-packages/newplugin/__init__.py", "added", "toolchain"),
    # the kernel's views
    ("/proc/self/x", "added", "system"),
]


@pytest.mark.parametrize(("path", "kind", "rule"), IMPLICIT)
def test_what_the_toolchain_reads_by_itself_comes_from_the_image(
    path: str, kind: str, rule: str
) -> None:
    ground = APP if path.startswith("/app/") else ROOT
    assert _rule(ground, Change(path, kind))[path] == rule  # type: ignore[arg-type]


# Where real oracles write (the public tasks): the work product, applied on a fresh image.
REAL_WORK = [
    (ROOT, "/root/answer.json"),
    (ROOT, "/root/output/flood_results.csv"),
    (ROOT, "/root/workspace/solution.py"),  # imported by the tests from /root/workspace
    (ROOT, "/root/acc_system.py"),  # imported from /root (adaptive-cruise-control)
    (ROOT, "/root/glm3.nml"),  # a model configuration the task asks to edit
    (ROOT, "/root/SimPO/scripts/simpo_trainer.py"),
    (ROOT, "/root/data/openipf.xlsx"),
    (ROOT, "/output/scenario_1.json"),  # civ6-adjacency-optimizer's new top-level folder
    (ROOT, "/outputs/report.json"),  # multilingual-video-dubbing
    (ROOT, "/opt/syzkaller/sys/linux/dev_ppdev.txt"),
    (ROOT, "/opt/syzkaller/bin/syz-sysgen"),  # make's output, not on PATH
    (ROOT, "/opt/druid/lib/druid-server.jar"),
    (ROOT, "/tmp/solve_task.py"),
    (ROOT, "/var/tmp/scratch.bin"),
    (APP, "/app/output/itinerary.json"),
    (APP, "/app/arrow/.venv/lib/python3.12/site-packages/arrow/__init__.py"),
    (APP, "/app/arrow/uv.lock"),
    (APP, "/app/arrow/pyproject.toml"),
    (APP, "/app/intervals.py"),  # the examples' fix-interval-merge
    # fix-visual-stability: the project test.sh builds (cd /app; npm install; npm run build)
    (Ground(workdir="/app", builds_node_project=True), "/app/package.json"),
    (APP, "/app/postcss.config.js"),
    (Ground(workdir="/workspace"), "/workspace/pom.xml"),  # spring-boot-jakarta-migration
    (Ground(workdir="/home/github/build"), "/home/github/build/patches/.venv/bin/python"),
    (Ground(workdir="/home/github/build"), "/home/github/build/patches/pyproject.toml"),
]


@pytest.mark.parametrize(("ground", "path"), REAL_WORK)
def test_real_work_products_are_applied(ground: Ground, path: str) -> None:
    changes = [Change(path, "added")]
    if "/.venv/" in path:  # the agent made the environment: its root is new too
        root = path[: path.index("/.venv/") + len("/.venv")]
        changes.insert(0, Change(root, "added"))
    assert _rule(ground, *changes)[path] is None


def test_an_image_folder_named_like_a_module_is_not_the_agents_shadow() -> None:
    # setup-fuzzing-py: /app/black is the image's checkout of the library under test.
    ground = Ground(workdir="/app", image_modules=frozenset({"black"}))
    rules = _rule(ground, Change("/app/black", "modified"), Change("/app/black/fuzz.py", "added"))
    assert set(rules.values()) == {None}
    rules = _rule(ground, Change("/app/black", "added"), Change("/app/black/x.py", "added"))
    assert set(rules.values()) == {"ground-module"}


def test_a_data_folder_named_like_a_module_is_work_product() -> None:
    # red team 4, honest-html-folder: /root/html/index.html is the answer; `html` is also a
    # standard-library package, but a folder holding no module file cannot shadow it.
    data = [Change("/root/html", "added"), Change("/root/html/index.html", "added")]
    data.append(Change("/root/html/assets", "added"))
    data.append(Change("/root/html/assets/site.css", "added"))
    assert set(_rule(ROOT, *data).values()) == {None}
    # nor is it a candidate for the look at what test.sh installs (a test-time shadow)
    assert shadow_candidates(classify(data, ROOT), ROOT) == {}
    code = classify([*data, Change("/root/html/__init__.py", "added")], Ground(workdir="/root"))
    assert code.excluded  # a package: left out as a shadow of the standard library's html
    # Any module file inside, at any depth, makes it a package again (or a namespace portion,
    # which can add submodules): the whole folder stays the image's.
    # ... and so does an entry whose contents are not listed and that could be imported as a
    # package (a link to a folder of modules elsewhere, an empty folder)
    for module in (
        "/root/html/__init__.py",
        "/root/html/assets/x.py",
        "/root/html/parser.pyc",
        "/root/html/assets/protobuf",
    ):
        rules = _rule(ROOT, *data, Change(module, "added"))
        assert set(rules.values()) == {"ground-module"}, (module, rules)
    # A lone entry (a file or a link, whose target is not listed) keeps the rule.
    assert _rule(ROOT, Change("/root/html", "added"))["/root/html"] == "ground-module"


def test_a_new_environment_is_work_product_but_one_the_image_had_is_not() -> None:
    new = [Change("/app/lib/.venv", "added"), Change("/app/lib/.venv/lib/python3.12", "added")]
    new.append(Change("/app/lib/.venv/lib/python3.12/site-packages/x.py", "added"))
    assert set(_rule(APP, *new).values()) == {None}
    old = [Change("/app/lib/.venv/lib/python3.12/site-packages/x.py", "added")]
    assert _rule(APP, *old)[old[0].path] == "toolchain"


def test_shadowing_modules_by_what_the_image_has_and_test_sh_installs() -> None:
    ground = Ground(
        workdir="/app",
        image_modules=frozenset({"numpy"}),
        installed_modules=installed_modules("pip3 install --break-system-packages cvxpy==1.4"),
    )
    rules = _rule(
        ground,
        Change("/app/numpy", "added"),
        Change("/app/numpy/__init__.py", "added"),
        Change("/app/cvxpy.py", "added"),
        Change("/app/mysolver.py", "added"),
    )
    assert rules == {
        "/app/numpy": "ground-module",
        "/app/numpy/__init__.py": "ground-module",  # below an excluded entry
        "/app/cvxpy.py": "ground-module",
        "/app/mysolver.py": None,
    }


def test_module_paths_the_tests_add_are_guarded_like_the_working_directory() -> None:
    paths = module_paths(
        "export PYTHONPATH=/root/src:$PYTHONPATH\n",
        ['sys.path.insert(0, "/root/workspace")\n', "sys.path.append('/data')\n"],
    )
    assert paths == ("/root/src", "/root/workspace", "/data")
    ground = Ground(workdir="/root", module_paths=paths)
    rules = _rule(
        ground,
        Change("/root/workspace/solution.py", "added"),
        Change("/root/workspace/json.py", "added"),
        Change("/root/src/pytest.py", "added"),
    )
    assert rules["/root/workspace/solution.py"] is None
    assert rules["/root/workspace/json.py"] == "ground-module"
    assert rules["/root/src/pytest.py"] == "ground-module"


def test_test_sh_facts() -> None:
    script = (
        "apt-get install -y curl\n"
        "curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh\n"
        "uvx --with pytest==8.4.1 --with pytest-json-ctrf==0.3.5 pytest /tests -rA\n"
        "cd /app && uv add numpy pandas>=2\n"
        "pip3 install --break-system-packages -r reqs.txt scipy==1.11.4\n"
    )
    assert {"pytest", "pytest_json_ctrf", "numpy", "pandas", "scipy"} <= installed_modules(script)
    assert {"json_ctrf", "ctrf"} <= installed_modules(script)  # a plugin's likely module names
    assert "json" not in installed_modules(script) and "pytest_" not in installed_modules(script)
    assert "curl" not in installed_modules(script)
    assert start_folders(script) == ("/app",)


def test_the_folders_test_sh_starts_in_and_puts_on_the_module_path_are_read_through_its_shell() -> (
    None
):
    """A folder test.sh reaches through a variable or ``pushd``, a script's own folder (first on
    its Python's module path), ``PYTHONPATH`` in ``[verifier].env``: each is a place the verifier
    starts or imports from (red team 6: ``cd "$APP_DIR"``, ``python3 /tmp/gen_truth.py``)."""
    script = (
        "APP_DIR=/app\n"
        'export OUT="/srv/out"\n'
        'cd "$APP_DIR"\n'
        "pushd /opt/proj\n"
        "cd ${OUT}/sub\n"
        'cd -\ncd scripts\ncd "$(dirname "$0")"\ncd ~/work\n'
        "cp /tests/gen_truth.py /tmp/gen_truth.py\n"
        "python3 /tmp/gen_truth.py\n"
        "python3 -u /root/scripts/gen.py --x 1\n"
        "python3 -m pytest /tests/test_outputs.py\n"
        "apt-get install -y curl python3\n"
        'python3 -c "print(1)"\n'
        "uv run --with pytest check/run.py\n"
        "if [ -f /x ]; then /opt/tools/check.py; fi\n"
        "PYTHONPATH=$APP_DIR/src:/lib:$PYTHONPATH python3 -m pytest\n"
    )
    assert start_folders(script) == ("/app", "/opt/proj", "/srv/out/sub", "scripts", "/root/work")
    assert module_paths(script, [], {"PYTHONPATH": "/app/env"}) == (
        "/app/src",
        "/lib",
        "/app/env",
        "/tmp",
        "/root/scripts",
        "check",
        "/opt/tools",
    )
    # of the tests' own scripts only, given their names: a script of the agent's is graded code
    assert module_paths(script, [], {}, frozenset({"gen_truth.py", "test.sh"})) == (
        "/app/src",
        "/lib",
        "/tmp",
    )
    # inside a `bash -c '...'` string too
    assert start_folders("bash -c 'cd /app && python3 -m pytest /tests'\n") == ("/app",)
    assert script_folders('sh -c "python3 /tmp/gen.py"\n') == ("/tmp",)
    # a name assigned twice gives both folders; one never assigned gives none
    assert start_folders("D=/a\nD=/b\ncd $D\ncd $NOWHERE\n") == ("/a", "/b")
    ground = Ground(workdir="/root", module_paths=module_paths(script))
    rules = _rule(ground, Change("/tmp/json.py", "added"), Change("/tmp/answer_helper.py", "added"))
    assert rules == {"/tmp/json.py": "ground-module", "/tmp/answer_helper.py": None}


def test_a_module_named_like_what_every_verifier_imports_is_left_out_wherever_it_is() -> None:
    """No reading of test.sh lists every folder a Python of the verifier's starts in or is
    pointed at (``xargs python3``, ``bash -c``, ``subprocess.run(..., cwd=...)``, a path built
    from an expression): a module of the agent's named like the standard library's, the test
    runner's or what test.sh installs is left out anywhere; an environment the agent made keeps
    its packages, data folders and files Python cannot import keep theirs, and a module by
    another name (or one named like only an image's library) is the agent's."""
    ground = Ground(
        workdir="/root",
        image_modules=frozenset({"numpy", "html"}),
        installed_modules=frozenset({"yaml"}),
    )
    rules = _rule(
        ground,
        Change("/tmp/json.py", "added"),
        Change("/outputs", "added"),
        Change("/outputs/json", "added"),
        Change("/outputs/json/__init__.py", "added"),
        Change("/srv/evil/pytest/__init__.py", "added"),
        Change("/srv/evil/pytest", "added"),
        Change("/srv/evil", "added"),
        Change("/app/src/statistics.py", "added"),
        Change("/app/src/yaml.pyc", "added"),
        Change("/opt/proj", "added"),
        Change("/opt/proj/.venv", "added"),
        Change("/opt/proj/.venv/pyvenv.cfg", "added"),
        Change("/opt/proj/.venv/lib/python3.12/site-packages/pytest/__init__.py", "added"),
        Change("/opt/proj/web/node_modules/json/index.js", "added"),
        Change("/home/u/report/html/index.html", "added"),
        Change("/home/u/report/logging/run.log", "added"),
        Change("/home/u/report/code", "added"),
        Change("/home/u/proj/solver.py", "added"),
        Change("/home/u/proj/numpy_tools.py", "added"),
        Change("/home/u/proj/numpy.py", "added"),
        Change("/home/u/proj/mytool", "added"),
        Change("/home/u/proj/mytool/__init__.py", "added"),
        Change("/home/u/proj/mytool/types.py", "added"),
        Change("/home/u/proj/mytool/email", "added"),
        Change("/home/u/proj/mytool/email/__init__.py", "added"),
        Change("/app/rtplug-1.0.dist-info", "added"),
        Change("/app/rtplug-1.0.dist-info/entry_points.txt", "added"),
        Change("/app/rtplug.py", "added"),
    )
    assert rules["/tmp/json.py"] == "ground-module"
    assert rules["/outputs/json"] == rules["/outputs/json/__init__.py"] == "ground-module"
    assert rules["/srv/evil/pytest"] == rules["/srv/evil/pytest/__init__.py"] == "ground-module"
    assert rules["/app/src/statistics.py"] == rules["/app/src/yaml.pyc"] == "ground-module"
    # a plugin registry anywhere (a pytest11 entry point needs no import by the tests)
    assert rules["/app/rtplug-1.0.dist-info"] == "ground-config"
    assert rules["/app/rtplug-1.0.dist-info/entry_points.txt"] == "ground-config"
    # node's json package is no shadow of Python's, but every node_modules entry is node-module
    assert rules["/opt/proj/web/node_modules/json/index.js"] == "node-module"
    for kept in (
        "/opt/proj/.venv/lib/python3.12/site-packages/pytest/__init__.py",
        "/home/u/report/html/index.html",
        "/home/u/report/logging/run.log",
        "/home/u/report/code",
        "/home/u/proj/solver.py",
        "/home/u/proj/numpy_tools.py",
        "/home/u/proj/numpy.py",
        # a package's own submodules: mytool.types, mytool.email (red team 8's honest package)
        "/home/u/proj/mytool/types.py",
        "/home/u/proj/mytool/email",
        "/home/u/proj/mytool/email/__init__.py",
        "/app/rtplug.py",
        "/outputs",
        "/srv/evil",
    ):
        assert rules[kept] is None, kept


def test_stale_bytecode_python_rewrote_needs_no_regrade_unless_the_verifier_reads_it() -> None:
    # lake-warming-attribution: Python rewrote a stale .pyc under /usr while the agent ran.
    changes = [Change("/usr/lib/python3/dist-packages/x/__pycache__/y.cpython-312.pyc", "modified")]
    assert not classify(changes, ROOT).needs_regrade
    # A verifier that runs python3 -I reads the __pycache__ beside the module: then it is the
    # image's, and a pass is graded again without the agent's.
    strict = Ground(workdir="/root", pycache_isolated=False)
    assert classify(changes, strict).needs_regrade
    assert not pycache_isolated("python3 -I /tests/test_outputs.py", {})
    assert not pycache_isolated("python3 /tests/t.py", {"PYTHONPYCACHEPREFIX": "/x"})
    assert pycache_isolated("uvx --with pytest==8.4.1 pytest /tests -rA", {})


def test_benign_changes_are_left_out_without_a_regrade() -> None:
    product = classify(
        [
            Change("/root/.bash_history", "added"),
            Change("/app/__pycache__/intervals.cpython-311.pyc", "added"),
            Change("/var/log/apt/history.log", "modified"),
            Change("/usr/lib/python3/dist-packages/x/__pycache__/y.cpython-311.pyc", "modified"),
            Change("/root/answer.txt", "added"),
        ],
        ROOT,
    )
    assert [c.path for c in product.applied] == ["/root/answer.txt"]
    assert not product.needs_regrade
    assert {e.rule for e in product.excluded} == {"benign"}


def test_harness_places_are_neither_applied_nor_evidence() -> None:
    product = classify(
        [
            Change("/logs/agent/x.txt", "added"),
            Change("/tests/test.sh", "added"),
            Change("/solution/solve.sh", "added"),
            Change("/instruction.md", "added"),
            Change("/root/.claude/skills/x/SKILL.md", "modified"),
            Change("/tmp/skillsbench-agent-script.sh", "added"),
        ],
        ROOT,
    )
    assert product.applied == [] and product.excluded == []


def test_a_declared_work_product_wins() -> None:
    ground = Ground(workdir="/root", declared=("/usr/local/lib",))
    rules = _rule(ground, Change("/usr/local/lib/python3.11/site-packages/answerlib", "added"))
    assert set(rules.values()) == {None}


@pytest.mark.parametrize(
    ("link", "target", "escapes"),
    [
        ("/root/answer.json", "/tests/expected.json", True),
        ("/root/answer.json", "../tests/expected.json", True),
        ("/root/t", "/tests", True),
        ("/root/r", "/", True),  # / holds /tests
        ("/root/l", "/logs/verifier/reward.txt", True),
        ("/root/p", "/proc/1/root/tests/x", True),
        ("/root/s", "/solution/solve.sh", True),
        ("/root/data", "/root/real-data", False),
        ("/root/lib", "/usr/lib/x86_64-linux-gnu/libm.so.6", False),
        ("/app/out", "../tmp/out", False),
        # The kernel reads "//x" as "/x" (POSIX normpath keeps it): red team, links.
        ("/root/answer.txt", "//./tests//expected.txt", True),
        ("/root/p", "//proc/self/root/tests/expected.txt", True),
        # ".." after a component that may be a link (/root/d -> /srv, the image's /var/run ->
        # /run) is not what the name says: never trusted.
        ("/root/answer.txt", "/root/d/../tests/expected.txt", True),
        ("/root/answer.txt", "d/../tests/expected.txt", True),
        ("/root/answer.txt", "/var/run/../tests/expected.txt", True),
        # Leading ".." walk up from the link's own folder: node's .bin links, a venv's.
        ("/app/node_modules/.bin/x", "../pkg/bin/x.js", False),
        ("/app/lib/.venv/lib64", "lib", False),
    ],
)
def test_links_to_what_the_harness_places_later(link: str, target: str, escapes: bool) -> None:
    assert link_escapes(link, target) is escapes


def test_distribution_metadata_where_the_verifier_imports_is_a_plugin_registry() -> None:
    # importlib.metadata reads every sys.path folder: a dist-info in the working directory
    # registers a pytest11 plugin for `python3 -m pytest` (red team, a01).
    rules = _rule(
        ROOT,
        Change("/root/rtplug-1.0.dist-info", "added"),
        Change("/root/rtplug-1.0.dist-info/entry_points.txt", "added"),
        Change("/root/rtplug.py", "added"),
        Change("/root/evil.pth", "added"),
        Change("/root/old.egg-info/PKG-INFO", "added"),
    )
    assert rules["/root/rtplug-1.0.dist-info"] == "ground-config"
    assert rules["/root/rtplug-1.0.dist-info/entry_points.txt"] == "ground-config"
    assert rules["/root/evil.pth"] == "ground-config"
    assert rules["/root/old.egg-info/PKG-INFO"] == "ground-config"
    assert rules["/root/rtplug.py"] is None  # alone a module nobody loads
    # importlib.metadata matches the suffix whatever its case.
    upper = _rule(
        ROOT,
        Change("/root/Evilplug-1.0.DIST-INFO", "added"),
        Change("/root/Evilplug-1.0.DIST-INFO/entry_points.txt", "added"),
        Change("/root/Eggplug.EGG-INFO/PKG-INFO", "added"),
    )
    assert set(upper.values()) == {"ground-config"}, upper


@pytest.mark.parametrize("home", ["/root", "/home/agent"])
def test_a_package_installed_with_user_under_a_new_name_is_work_product(home: str) -> None:
    """``pip install --user`` puts the agent's library in the user site, which the verifier's
    Python reads like a system site: a new name is the agent's, the rest of it the image's."""
    site = f"{home}/.local/lib/python3.12/site-packages"
    changes = [
        Change(f"{home}/.local", "added"),
        Change(site, "added"),
        Change(f"{site}/answerhelp", "added"),
        Change(f"{site}/answerhelp/__init__.py", "added"),
        Change(f"{site}/answerhelp-1.0.dist-info/entry_points.txt", "added"),
        Change(f"{site}/pytest/__init__.py", "added"),
        Change(f"{site}/zz.pth", "added"),
        Change(f"{site}/usercustomize.py", "added"),
        Change(f"{home}/.local/bin/answerhelp", "added"),
        Change(f"{home}/.local/share/uv/tools/x", "added"),
    ]
    rules = _rule(Ground(workdir="/root"), *changes)
    assert rules[f"{site}/answerhelp"] is None
    assert rules[f"{site}/answerhelp/__init__.py"] is None
    for path in (
        f"{home}/.local",
        site,
        f"{site}/answerhelp-1.0.dist-info/entry_points.txt",
        f"{site}/pytest/__init__.py",
        f"{site}/zz.pth",
        f"{site}/usercustomize.py",
        f"{home}/.local/bin/answerhelp",
        f"{home}/.local/share/uv/tools/x",
    ):
        assert rules[path] == "home-config", path


def test_a_package_installed_under_a_new_name_is_work_product_but_not_its_metadata() -> None:
    # An agent's solution imports a library it pip-installed (red team, fp1).
    site = "/usr/local/lib/python3.11/dist-packages"
    changes = [
        Change(site, "modified"),
        Change(f"{site}/more_itertools", "added"),
        Change(f"{site}/more_itertools/__init__.py", "added"),
        Change(f"{site}/more_itertools-10.5.0.dist-info", "added"),
        Change(f"{site}/more_itertools-10.5.0.dist-info/RECORD", "added"),
        Change(f"{site}/pytest", "added"),  # the runner's name: never the agent's
        Change(f"{site}/pytest/__init__.py", "added"),
        Change(f"{site}/json", "added"),  # the standard library's
        Change(f"{site}/zz.pth", "added"),
        Change(f"{site}/sitecustomize.py", "added"),
        Change(f"{site}/numpy/core/x.py", "modified"),  # the image's package changed
        Change("/usr/local/bin/more-tool", "added"),  # programs stay the image's
    ]
    rules = _rule(Ground(workdir="/root", image_modules=frozenset({"numpy"})), *changes)
    assert rules[f"{site}/more_itertools"] is None
    assert rules[f"{site}/more_itertools/__init__.py"] is None
    for path in (
        f"{site}/more_itertools-10.5.0.dist-info",
        f"{site}/more_itertools-10.5.0.dist-info/RECORD",
        f"{site}/pytest",
        f"{site}/pytest/__init__.py",
        f"{site}/json",
        f"{site}/zz.pth",
        f"{site}/sitecustomize.py",
        f"{site}/numpy/core/x.py",
        "/usr/local/bin/more-tool",
    ):
        assert rules[path] == "system", path
    assert rules[site] == "benign"  # the image's folder, marked only because of its entries


def test_a_module_named_like_what_test_sh_installed_is_found_after_the_verifier() -> None:
    # test.sh installs pyyaml (module yaml) and pandas (which brings dateutil): neither name
    # is known before it runs (red team, a03 and a15).
    changes = [
        Change("/root/yaml", "added"),
        Change("/root/yaml/__init__.py", "added"),
        Change("/root/dateutil.py", "added"),
        Change("/root/solution.py", "added"),
        Change("/root/answer.txt", "added"),
        Change("/usr/local/lib/python3.11/dist-packages/mylib", "added"),
    ]
    product = classify(changes, ROOT)
    assert not product.needs_regrade
    candidates = shadow_candidates(product, ROOT)
    assert set(candidates) == {
        "/root/yaml",
        "/root/dateutil.py",
        "/root/solution.py",
        "/usr/local/lib/python3.11/dist-packages/mylib",
    }
    listing = [
        "/usr/local/lib/python3.11/dist-packages\tyaml",
        "/usr/local/lib/python3.11/dist-packages\tPyYAML-6.0.dist-info",
        "/root/.cache/uv/archive-v0/x/lib/python3.11/site-packages\tdateutil",
        "/usr/local/lib/python3.11/dist-packages\tmylib",  # itself: no shadow
        "/usr/lib/python3.11\tjson",
    ]
    hit = exclude_test_time_shadows(product, candidates, listing)
    assert sorted(hit) == ["/root/dateutil.py", "/root/yaml"]
    assert product.needs_regrade
    left_out = {e.path: e.rule for e in product.excluded}
    assert left_out == {
        "/root/yaml": "test-time-shadow",
        "/root/yaml/__init__.py": "test-time-shadow",
        "/root/dateutil.py": "test-time-shadow",
    }
    assert {c.path for c in product.applied} == {
        "/root/solution.py",
        "/root/answer.txt",
        "/usr/local/lib/python3.11/dist-packages/mylib",
    }


def test_an_image_folder_of_the_working_directory_is_no_candidate() -> None:
    # setup-fuzzing-py: /app/arrow is the image's; the agent's venv inside it installs arrow.
    product = classify(
        [Change("/app/arrow", "modified"), Change("/app/arrow/fuzz.py", "added")], APP
    )
    assert shadow_candidates(product, APP) == {}
    new = classify([Change("/app/newlib", "added"), Change("/app/newlib/x.py", "added")], APP)
    candidates = shadow_candidates(new, APP)
    listing = ["/app/newlib/.venv/lib/python3.12/site-packages\tnewlib"]  # inside itself
    assert exclude_test_time_shadows(new, candidates, listing) == []


def test_a_project_test_sh_builds_keeps_its_own_definition() -> None:
    # The answer is /app/pyproject.toml and test.sh runs `pip3 install .` there (red team fp2).
    script = "cd /app\npip3 install --break-system-packages .\npython3 -m pytest /tests\n"
    ground = Ground(workdir="/app", builds_project=builds_project(script))
    rules = _rule(
        ground, Change("/app/pyproject.toml", "modified"), Change("/app/tox.ini", "added")
    )
    assert rules == {"/app/pyproject.toml": None, "/app/tox.ini": "ground-config"}
    assert not builds_project("pip3 install --break-system-packages pytest==8.4.1")


@pytest.mark.parametrize(
    ("script", "builds"),
    [
        ("cd /app\nnpm install\nnpm run build\nnpm start &\n", True),  # fix-visual-stability
        ("cd /app\nnpm run build\n", True),  # react-performance-debugging
        ("cd /x && npm --silent install\n", True),
        ("npx jest\n", True),
        ("node /root/gen_ground_truth.mjs\n", False),  # threejs-to-obj
        ('pkill -f "node.*next" || true\n', False),
    ],
)
def test_node_project_test_sh_runs(script: str, builds: bool) -> None:
    assert builds_node_project(script) is builds
    ground = Ground(workdir="/app", builds_node_project=builds_node_project(script))
    rule = _rule(ground, Change("/app/package.json", "modified"))["/app/package.json"]
    assert rule == (None if builds else "ground-config")
    assert _rule(APP, Change("/app/pyproject.toml", "modified"))["/app/pyproject.toml"] == (
        "ground-config"
    )


def test_an_image_folder_marked_only_by_its_entries_needs_no_regrade() -> None:
    """sales-pivot-analysis's oracle ran the image's /opt/venv Python, which wrote one .pyc
    beside numpy: four folders of the venv were listed as modified. Nothing the verifier reads
    changed, so no regrade; a changed module of the same folder still makes one."""
    venv = "/opt/venv/lib/python3.12/site-packages"
    changes = [
        Change("/opt/venv/lib/python3.12", "modified"),
        Change(venv, "modified"),
        Change(f"{venv}/numpy", "modified"),
        Change(f"{venv}/numpy/lib", "modified"),
        Change(f"{venv}/numpy/lib/__pycache__", "added"),
        Change(f"{venv}/numpy/lib/__pycache__/_twodim_base_impl.cpython-312.pyc", "added"),
        Change("/root/sales.xlsx", "modified"),
    ]
    ground = Ground(workdir="/root", path_dirs=("/opt/venv/bin", "/usr/local/bin", "/usr/bin"))
    product = classify(changes, ground)
    assert not product.needs_regrade
    assert [c.path for c in product.applied] == ["/root/sales.xlsx"]
    changed = classify([*changes, Change(f"{venv}/numpy/__init__.py", "modified")], ground)
    assert changed.needs_regrade


def test_folders_the_verifiers_configuration_names_hold_what_the_image_had() -> None:
    """A wheel beside the wheelhouse test.sh's environment names (a higher build tag wins the
    install: red team) is the image's to give, as is anything under an index folder test.sh
    names; PYTHONPATH is not such a setting (the agent's modules go there)."""
    script = "pip install -f /srv/wheels pytest\nPIP_INDEX_URL=file:///srv/index pip install x\n"
    env = {"PIP_FIND_LINKS": "/opt/wheels", "UV_INDEX": "file:///opt/idx", "PYTHONPATH": "/app"}
    dirs = input_dirs(script, env)
    assert dirs == ("/opt/idx", "/opt/wheels", "/srv/index", "/srv/wheels")
    assert input_dirs("", {"UV_CACHE_DIR": "/tmp/x", "PIP_TARGET": "/"}) == ()
    # -f and -i are pip's only on pip's command line (adaptive-cruise-control's test.sh tests
    # `[ -f /root/simulation.py ]`: its oracle's answer is no wheelhouse)
    shell = "if [ -f /root/simulation.py ]; then python3 /root/simulation.py; fi\nsed -i /srv/x\n"
    assert input_dirs(shell, {}) == ()
    assert input_dirs("uv pip install -i file:///srv/idx x; [ -f /root/y ]", {}) == ("/srv/idx",)
    ground = Ground(workdir="/root", input_dirs=dirs)
    rules = _rule(
        ground,
        Change("/opt/wheels/pytest-8.4.1-9-py3-none-any.whl", "added"),
        Change("/srv/index/pytest/index.html", "modified"),
        Change("/opt/answertool/answer.py", "modified"),
        Change("/app/solution.py", "added"),
    )
    assert rules["/opt/wheels/pytest-8.4.1-9-py3-none-any.whl"] == "verifier-input"
    assert rules["/srv/index/pytest/index.html"] == "verifier-input"
    assert rules["/opt/answertool/answer.py"] is None
    assert rules["/app/solution.py"] is None


def test_the_images_path_folders_hold_its_programs_even_where_it_never_made_them() -> None:
    """jax-computing-basics' image puts ``/app/kona`` first on PATH and never makes it: a
    ``python`` the agent puts there is the interpreter uv and uvx find first (red team 11), a
    ``pytest`` there the program a bare ``pytest`` runs. Such a folder, a link at its place and
    what is in it are the image's; a PATH naming the working directory names no ground."""
    ground = Ground(workdir="/app", path_dirs=("/app/kona", "/home/travis/bin", "/usr/bin"))
    rules = _rule(
        ground,
        Change("/app/kona", "added"),
        Change("/app/kona/python3.99", "added"),
        Change("/home/travis/bin/python", "added"),
        Change("/app/answer.txt", "added"),
        Change("/app/tools/make-answer", "added"),
    )
    assert rules["/app/kona"] == "toolchain"
    assert rules["/app/kona/python3.99"] == "toolchain"
    assert rules["/home/travis/bin/python"] == "toolchain"
    assert rules["/app/answer.txt"] is None
    assert rules["/app/tools/make-answer"] is None
    # a link the agent makes at the PATH folder's place is judged where its copy lands
    links = {"/app/kona": "/srv/bin"}
    assert linked_folder_rules(links, ["/srv/bin", "/srv/bin/python"], ground) == {
        "/app/kona": "toolchain"
    }
    on_path = Ground(workdir="/app", path_dirs=("/app", "/usr/bin"))
    assert _rule(on_path, Change("/app/answer.txt", "added")) == {"/app/answer.txt": None}


def test_a_module_that_wins_over_the_images_in_a_folder_of_the_image_is_left_out() -> None:
    """Red team 12 (multilingual-video-dubbing's /opt/SpeechMOS, which torch.hub puts first on
    sys.path): a package folder beside the image's ``model.py``, an extension beside its source,
    a module named like an image library in a folder that is no package. What is looked for,
    and what the look's answer makes of it; nothing in the places the agent's work goes."""
    ground = Ground(workdir="/root", image_modules=frozenset({"mosaudio", "yaml"}))
    model = "/opt/SpeechMOS/speechmos/strong/model"
    product = WorkProduct(
        applied=[
            Change(f"{model}", "added"),
            Change(f"{model}/__init__.py", "added"),
            Change("/opt/SpeechMOS/mosaudio.py", "added"),
            Change("/opt/tool/fast.cpython-311-x86_64-linux-gnu.so", "added"),
            Change("/opt/tool/pkg/yaml.py", "added"),  # a submodule of the image's package
            Change("/opt/mine", "added"),  # a folder the agent made: its own
            Change("/opt/mine/mosaudio.py", "added"),
            Change("/root/yaml.py", "added"),  # the working directory: its own rules
            Change("/opt/SpeechMOS/notes.txt", "added"),
        ]
    )
    queries = image_module_queries(product, ground)
    assert set(queries) == {
        model,
        "/opt/SpeechMOS/mosaudio.py",
        "/opt/tool/fast.cpython-311-x86_64-linux-gnu.so",
        "/opt/tool/pkg/yaml.py",
    }
    assert queries[model].siblings[0] == f"{model}.py"
    script = image_module_script(queries)
    assert f"{model}.*.so" in script
    # the image has model.py and fast.py; /opt/tool/pkg is a package, /opt/SpeechMOS is not
    present = {f"{model}.py", "/opt/tool/fast.py", "/opt/tool/pkg/__init__.py"}
    added = {c.path for c in product.applied}
    hits = image_module_hits(queries, present, added)
    assert sorted(hits) == sorted(
        [model, "/opt/SpeechMOS/mosaudio.py", "/opt/tool/fast.cpython-311-x86_64-linux-gnu.so"]
    )
    # a sibling the agent made itself is no image's module
    assert image_module_hits(queries, present, added | {f"{model}.py"}) == [
        "/opt/SpeechMOS/mosaudio.py",
        "/opt/tool/fast.cpython-311-x86_64-linux-gnu.so",
    ]


def test_the_image_module_look_runs_in_a_shell_and_names_what_exists(tmp_path: Path) -> None:
    """The look is one ``sh`` command: globs expanded, odd names quoted, only what exists."""
    odd = tmp_path / "it's a dir"
    (odd / "mod").mkdir(parents=True)
    (odd / "mod.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    (odd / "other.py").write_text("")
    ground = Ground(workdir="/root", image_modules=frozenset({"other"}))
    product = WorkProduct(
        applied=[
            Change(f"{odd}/mod", "added"),
            Change(f"{odd}/mod/__init__.py", "added"),
            Change(f"{odd}/x.py", "added"),
        ]
    )
    queries = image_module_queries(product, ground)
    assert set(queries) == {f"{odd}/mod"}
    done = subprocess.run(
        ["/bin/sh", "-c", image_module_script(queries)], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == [f"{odd}/mod.cpython-311-x86_64-linux-gnu.so"]


def test_what_the_images_environment_names_for_the_tools_holds_what_the_image_had() -> None:
    """speaker-diarization-subtitles' image sets ``PIP_CONSTRAINT=/tmp/constraints.txt``: the
    agent's line in that file (a direct URL to its own pytest wheel) must not reach test.sh's
    pip (red team 11). What the image's ENV names for an installer or a tool is the verifier's
    input as ``[verifier].env``'s is, under /tmp too; never the working directory or above."""
    env = [
        ("PIP_CONSTRAINT", "/tmp/constraints.txt"),
        ("UV_CACHE_DIR", "/srv/uv-cache"),
        ("CURL_HOME", "/srv/curl"),
        ("XDG_CONFIG_HOME", "/app"),  # the working directory's parent: not taken
        ("PYTHONPATH", "/app/lib"),  # the agent's modules go there
        ("PATH", "/app/kona:/usr/bin"),
        ("VENV", "/opt/venv"),
        ("APP_CONFIG", "/srv/app/config.yaml"),  # maybe the file the task asks to fix
        ("TORCH_HOME", "/tmp/torch"),  # torch.hub's checkpoints, which the tests load
        ("NUMBA_CACHE_DIR", "/srv/numba"),
    ]
    dirs = image_input_dirs(env, "/app/workspace")
    assert dirs == (
        "/srv/curl",
        "/srv/numba",
        "/srv/uv-cache",
        "/tmp/constraints.txt",
        "/tmp/torch",
    )
    ground = Ground(workdir="/app/workspace", input_dirs=dirs)
    rules = _rule(
        ground,
        Change("/tmp/constraints.txt", "modified"),
        Change("/tmp/w/pytest-8.4.1-py3-none-any.whl", "added"),
        Change("/app/workspace/out.srt", "added"),
    )
    assert rules["/tmp/constraints.txt"] == "verifier-input"
    assert rules["/app/workspace/out.srt"] is None


def test_files_named_like_the_tasks_test_code_stay_out() -> None:
    """adaptive-cruise-control's test.sh runs the first ``test_outputs.py`` that ``find /``
    meets: the agent's, anywhere, must not be it."""
    names = names_of_tests(
        [
            "test.sh",
            "test_outputs.py",
            "conftest_helpers.py",
            "expected.json",
            "sub/check_test.py",
            "testing_utils.py",
        ]
    )
    assert names == {"test.sh", "test_outputs.py", "check_test.py"}
    changes = [
        Change("/aaa", "added"),
        Change("/aaa/test_outputs.py", "added"),
        Change("/root/answer.json", "added"),
        Change("/root/expected.json", "added"),
        Change("/srv/check_test.py", "added"),
        Change("/root/test.sh", "added"),
        Change("/root/test_outputs.py", "deleted"),
    ]
    product = classify(changes, Ground(workdir="/root", test_names=names))
    excluded = {e.path: e.rule for e in product.excluded}
    assert excluded == {
        "/aaa/test_outputs.py": "test-name",
        "/srv/check_test.py": "test-name",
        "/root/test.sh": "test-name",
    }
    assert {c.path for c in product.applied} >= {"/aaa", "/root/answer.json", "/root/expected.json"}


def test_a_folder_named_like_a_file_of_the_tests_or_a_script_stays_out() -> None:
    """threejs-to-obj's test.sh copies ``/tests/gen_ground_truth.mjs`` to ``/root/`` and runs it:
    a folder of the agent's by that name (or by any script's name, for a copy under another
    name) would take the copy inside and run its own entry point. Files by such names are the
    agent's to overwrite; folders are not."""
    files = file_names(["test.sh", "gen_ground_truth.mjs", "expected.txt", "gen_truth"])
    assert files == {"test.sh", "gen_ground_truth.mjs", "expected.txt", "gen_truth"}
    changes = [
        Change("/root/gen_ground_truth.mjs", "added"),
        Change("/root/gen_ground_truth.mjs/index.js", "added"),
        Change("/root/gen_ground_truth.mjs/package.json", "added"),
        Change("/root/expected.txt", "added"),  # a file: cp overwrites it
        Change("/tmp/gen_truth/__main__.py", "added"),  # a tests file without an extension
        Change("/root/make_truth.py/__main__.py", "added"),  # a script's name
        Change("/root/lib.js/index.js", "added"),
        Change("/root/data", "added"),
        Change("/root/data/x.csv", "added"),
        Change("/root/web/node_modules/expected.txt/index.js", "added"),  # npm's own name
        Change("/root/web/node_modules/chart.js/dist/chart.js", "added"),
    ]
    ground = Ground(workdir="/root", test_files=files)
    rules = _rule(ground, *changes)
    assert rules == {
        "/root/gen_ground_truth.mjs": "test-name",
        "/root/gen_ground_truth.mjs/index.js": "test-name",
        "/root/gen_ground_truth.mjs/package.json": "test-name",
        "/root/expected.txt": None,
        "/tmp/gen_truth/__main__.py": "test-name",
        "/root/make_truth.py/__main__.py": "script-folder",
        "/root/lib.js/index.js": "script-folder",
        "/root/data": None,
        "/root/data/x.csv": None,
        # npm's own names, not the tests' or a script's; node-module all the same
        "/root/web/node_modules/expected.txt/index.js": "node-module",
        "/root/web/node_modules/chart.js/dist/chart.js": "node-module",
    }


def test_the_skill_folders_the_tests_name_come_from_the_image() -> None:
    """dialogue-parser's tests validate with the skill's library from the first of
    ``/app/environment/skills/dialogue_graph/scripts``, ``/root/.claude/skills/...``,
    ``environment/skills/...`` (relative) that exists: the agent's copy in the first place must
    not be it. A skill copied where the tests do not look is the agent's."""
    text = """
for skill_path in [
    '/app/environment/skills/dialogue_graph/scripts',
    'environment/skills/dialogue_graph/scripts',
    "./skill/mesh",
]:
    # without skills passed these; see skills/ for more
"""
    places = skill_places(text)
    assert places == {
        "/app/environment/skills/dialogue_graph",
        "environment/skills/dialogue_graph",
        "skill/mesh",
    }
    changes = [
        Change("/app/environment/skills/dialogue_graph/scripts/graph.py", "added"),
        Change("/app/environment/skills", "added"),
        Change("/root/environment/skills/dialogue_graph/x.py", "added"),
        Change("/srv/skill/mesh/SKILL.md", "added"),
        Change("/root/proj/skills/dialogue_graph2/x.py", "added"),  # not where they look
        Change("/root/proj/skills/answerer/scripts/a.py", "added"),
        Change("/app/dialogue.json", "added"),
    ]
    rules = _rule(Ground(workdir="/app", skill_places=places), *changes)
    assert rules == {
        "/app/environment/skills/dialogue_graph/scripts/graph.py": "skill",
        "/app/environment/skills": None,
        "/root/environment/skills/dialogue_graph/x.py": "skill",
        "/srv/skill/mesh/SKILL.md": "skill",
        "/root/proj/skills/dialogue_graph2/x.py": None,
        "/root/proj/skills/answerer/scripts/a.py": None,
        "/app/dialogue.json": None,
    }


def test_a_link_is_judged_where_the_regrades_copy_of_it_will_be() -> None:
    """The regrade lays a link as a copy of what it points at: a link at ``.../skills`` (or
    above it) to the agent's folder holding the skill, or one named like a script to a folder,
    is left out for what its copy would be; a link to a file by a tests file's name is not."""
    ground = Ground(
        workdir="/app",
        skill_places=frozenset(
            {"/app/environment/skills/checker", "/app/environment2/skills/checker"}
        ),
        test_files=frozenset({"answer.txt"}),
    )
    paths = [
        "/tmp/sk/checker/scripts/checker.py",
        "/tmp/envx/skills",
        "/tmp/sk2/checker/scripts/checker.py",
        "/tmp/gen/__main__.py",
        "/tmp/out/answer.txt",
        "/tmp/data/x.csv",
    ]
    links = {
        "/app/environment/skills": "/tmp/sk",
        "/srv/environment": "/tmp/envx",  # not a place the tests name: nothing
        "/app/environment2": "/tmp/envx",  # its skills link, through it, is
        "/tmp/envx/skills": "../sk2",
        "/root/make_truth.py": "/tmp/gen",
        "/root/answer.txt": "/tmp/out/answer.txt",  # a file by a tests file's name
        "/root/output": "/tmp/data",
    }
    found = linked_folder_rules(links, [*paths, *links], ground)
    assert found == {
        "/app/environment/skills": "skill",
        "/app/environment2": "skill",
        "/root/make_truth.py": "script-folder",
    }


def test_a_link_is_judged_by_every_rule_where_its_copy_will_be() -> None:
    """A start folder of test.sh made a link to the agent's folder of a ``pytest`` package (the
    regrade's copy puts it where ``python3 -m pytest`` imports first) is left out as
    ``ground-module``; one whose copy holds a pytest configuration where pytest looks for it as
    ``ground-config``; the same folders linked where no verifier looks, and an output folder
    linked to data, are the agent's."""
    ground = Ground(workdir="/root", extra_starts=("/app", "/work"))
    paths = [
        "/srv/evil/pytest/__init__.py",
        "/srv/cfg/pytest.ini",
        "/srv/data/html/index.html",
        "/srv/data/answer.json",
    ]
    links = {
        "/app": "/srv/evil",
        "/work": "../srv/cfg",
        "/home/u/proj": "/srv/evil",
        "/root/output": "/srv/data",
    }
    found = linked_folder_rules(links, [*paths, *links], ground)
    assert found == {"/app": "ground-module", "/work": "ground-config"}


# The ways a test module or a test.sh names a module or a file (taken from the 87 real tasks'
# tests: imports, spec_from_file_location, sys.path folders, python3 -m, scripts run by name,
# import_module).
@pytest.mark.parametrize(
    ("text", "module"),
    [
        ("from solution import merge\n", "solution"),
        ("import numpy as np, helpers.core as h\n", "helpers"),
        ("spec_from_file_location('acc_system', '/root/acc_system.py')", "acc_system"),
        ('subprocess.run(["python3", "/root/solve.py"])', "solve"),
        ('importlib.import_module("pkg.sub")', "pkg"),
        ('importlib.import_module("plugins." + name)', "plugins"),
        ('import_module(f"plugins.{name}")', "plugins"),
        ('subprocess.run([sys.executable, "-m", "solver"])', "solver"),
        ('run(["python3", "/root/mypkg/main.py"])', "main"),
        ("x = '/root/fast.cpython-311-x86_64-linux-gnu.so'", "fast"),
        ('PACKAGE = "answer_cli"\nrun([sys.executable, "-m", PACKAGE])', "answer_cli"),
        ('NAME: str = "plugin_x"\nimportlib.import_module(NAME)', "plugin_x"),
    ],
)
def test_python_tests_name_modules_by_what_they_import_and_run(text: str, module: str) -> None:
    assert module in references(text, "test_outputs.py").modules


@pytest.mark.parametrize(
    ("text", "module"),
    [
        ("python3 -m mytool --check\n", "mytool"),
        ("python3 /root/solve.py > out.txt\n", "solve"),
        ('python3 -c "import answerlib; print(answerlib.X)"\n', "answerlib"),
    ],
)
def test_shell_names_modules_by_what_it_runs(text: str, module: str) -> None:
    assert module in references(text, "test.sh").modules


@pytest.mark.parametrize(
    "text",
    [
        'json.load(open("/root/answer.json"))',  # a file, not the module answer
        'msg = "See https://example.org/docs and import org.legacy. from org chart"',
        "# import org helpers\nassert Path('/root/answer.json').exists()",
        'assert "org" in result',  # a quoted word
    ],
)
def test_a_file_a_word_or_a_comment_is_no_module(text: str) -> None:
    assert not {"answer", "org"} & references(text, "test_outputs.py").modules


def test_folders_are_places_and_files_whole_names() -> None:
    found = references('run(["python3", "/root/mypkg/main.py"]); p = "/root/out/"', "t.py")
    assert {"mypkg", "out"} <= found.places
    assert not {"mypkg", "out"} & found.modules
    found = references("bash /root/run.sh && cat /root/out/answer.json", "test.sh")
    assert {"run.sh", "answer.json"} <= found.files


def test_a_crafted_text_is_read_in_linear_time() -> None:
    """A run like ``+a+a+a…`` made the file-name pattern quadratic: 1 MiB took about 20 minutes
    of the worker's event loop (red team 3). Now bounded: this 512 KiB takes well under a
    second on any machine, so a regression shows as a test past its timeout."""
    text = "+a" * (256 << 10)
    references(text, "test.sh")
    references(f"x = {text!r}", "t.py")


def _entry(
    name: str, module: str | None, refs: str = "", *, importable: bool = True, **files: str
) -> ModuleEntry:
    """An entry: a file whose code is ``refs``, or a folder of ``files`` (name_py="...")."""
    path = f"/root/{name}"
    code = [(name, references(refs, name))] if refs else []
    paths = [path] if importable and not files else []
    for key, text in files.items():
        file = key.replace("_py", ".py").replace("_sh", ".sh")
        code.append((file, references(text, file)))
        if file.endswith(".py"):
            paths.append(f"{path}/{file}")
    return ModuleEntry(name, module, importable, True, tuple(code), tuple(paths))


def test_a_module_only_an_optional_import_could_find_is_unreached() -> None:
    # pickle's `from org.python.core import PyStringMap` finds /root/org under python3 -m pytest
    entries = {
        "/root/org": _entry("org", "org", __init___py="import os\n"),
        "/root/solution.py": _entry("solution.py", "solution", "def merge(x):\n    return x\n"),
        "/root/answer.json": _entry("answer.json", None, importable=False),
    }
    named = references("from solution import merge\nopen('/root/answer.json')\n", "t.py")
    assert unreached_modules(entries, named) == ["/root/org/__init__.py"]


def test_modules_the_reached_code_imports_are_kept_transitively() -> None:
    entries = {
        "/root/solution.py": _entry("solution.py", "solution", "from helpers import f\n"),
        "/root/helpers": _entry("helpers", "helpers", __init___py="import _impl\n"),
        "/root/_impl.py": _entry("_impl.py", "_impl", "x = 1\n"),
        "/root/run.sh": _entry("run.sh", None, "python3 /root/main.py\n", importable=False),
        "/root/main.py": _entry("main.py", "main", "# import scratch\n"),
        "/root/scratch.py": _entry("scratch.py", "scratch", "x = 1\n"),
    }
    named = references("from solution import f\nsubprocess.run(['bash', '/root/run.sh'])", "t.py")
    assert unreached_modules(entries, named) == ["/root/scratch.py"]


def test_an_output_file_cannot_name_a_module_for_the_agent() -> None:
    # The tests read answer.json (whose words the agent chose: module_entries reads no text of
    # it). A module called like the file's stem is not reached through it.
    entries = {
        "/root/answer.json": _entry("answer.json", None, importable=False),
        "/root/answer.py": _entry("answer.py", "answer", "import org\n"),
        "/root/org": _entry("org", "org", __init___py="x = 1\n"),
    }
    named = references("json.load(open('/root/answer.json'))", "t.py")
    assert unreached_modules(entries, named) == ["/root/answer.py", "/root/org/__init__.py"]


def test_unnamed_candidates_are_new_modules_of_the_module_folders_only() -> None:
    ground = Ground(
        workdir="/root",
        module_paths=("/root/workspace",),
        named=references("from solution import f"),
        declared=("/root/declared_pkg",),
    )
    product = WorkProduct(
        applied=[
            Change("/root/org", "added"),
            Change("/root/org/__init__.py", "added"),
            Change("/root/solution.py", "added"),
            Change("/root/answer.json", "added"),
            Change("/root/declared_pkg", "added"),
            Change("/root/workspace/helper.py", "added"),
            Change("/root/data/helper.py", "added"),  # not a module folder
            Change("/root/existing.py", "modified"),  # the image's
            Change("/tmp/x.py", "added"),
        ]
    )
    assert unnamed_candidates(product, ground) == {
        "/root/org": "org",
        "/root/workspace/helper.py": "helper",
    }
    assert unnamed_candidates(product, Ground(workdir="/root")) == {}  # facts unknown: off


def test_a_folder_named_as_a_place_keeps_its_data_and_only_its_named_code() -> None:
    # The tests read /root/out/answer.json: out/ is kept, but a module in it they never run
    # names nothing (else it could name /root/org for the agent), and goes.
    entries = {
        "/root/out": _entry("out", "out", x_py="import org\n", run_sh="python3 -m tool\n"),
        "/root/org": _entry("org", "org", __init___py="x = 1\n"),
        "/root/tool": _entry("tool", "tool", __init___py="x = 1\n"),
    }
    named = references("open('/root/out/answer.json')", "t.py")
    assert unreached_modules(entries, named) == [
        "/root/org/__init__.py",
        "/root/out/x.py",
        "/root/tool/__init__.py",
    ]
    # ... while a script of it the tests run by name is read (run.sh runs tool), and a module of
    # it they run is kept with what it imports (x.py is graded code: its org is its own)
    named = references("subprocess.run(['bash', '/root/out/run.sh'])", "t.py")
    assert unreached_modules(entries, named) == ["/root/org/__init__.py", "/root/out/x.py"]
    named = references("subprocess.run(['python3', '/root/out/x.py'])", "t.py")
    assert unreached_modules(entries, named) == ["/root/tool/__init__.py"]


def test_the_standard_librarys_optional_imports_are_shadows_whatever_the_tests_say() -> None:
    # `import org.legacy` in the tests' text, or a test that imports org itself: /root/org still
    # runs first under python3 -m pytest (pickle's optional org.python.core)
    ground = Ground(workdir="/root", named=references("import org.legacy\n", "t.py"))
    rules = _rule(ground, Change("/root/org", "added"), Change("/root/org/__init__.py", "added"))
    assert rules == {"/root/org": "ground-module", "/root/org/__init__.py": "ground-module"}


def test_libraries_installed_under_another_import_name_are_shadows() -> None:
    script = (
        "pip3 install --break-system-packages pyyaml==6.0 python-docx Pillow beautifulsoup4 "
        "opencv-python PyPDF2 scikit-learn\n"
    )
    names = installed_modules(script)
    assert {"yaml", "docx", "PIL", "bs4", "cv2", "pypdf2", "sklearn"} <= names
    ground = Ground(workdir="/root", installed_modules=names)
    for planted in ("/root/yaml.py", "/root/PyPDF2/__init__.py", "/root/pil/__init__.py"):
        assert _rule(ground, Change(planted, "added"))[planted] == "ground-module", planted


def test_a_module_in_a_placed_folder_that_the_reached_code_imports_is_kept() -> None:
    """A program the tests run puts ``/root/proj/skills/answerer/scripts`` on its ``sys.path``
    and imports ``answerer``: inside another entry that file is importable only through such a
    path, so an import of its name keeps it (red team 5's honest skill copy)."""
    entries = {
        "/root/simulation.py": _entry(
            "simulation.py",
            "simulation",
            "import sys\nsys.path.insert(0, '/root/proj/skills/answerer/scripts')\n"
            "import answerer\n",
        ),
        "/root/proj": _entry("proj", "proj", answerer_py="X = 1\n", other_py="Y = 2\n"),
    }
    named = references("python3 /root/simulation.py\n", "test.sh")
    assert unreached_modules(entries, named) == ["/root/proj/other.py"]


def test_a_package_in_a_placed_folder_that_the_reached_code_loads_by_a_computed_name_is_kept() -> (
    None
):
    """test.sh runs ``/root/solution/main.py``, which loads ``plugins.<name>`` by computed names
    (red team 7's honest plugins): the package's files are kept, another module of the folder
    that nothing names is not."""
    entries = {
        "/root/solution": _entry(
            "solution",
            "solution",
            main_py="import importlib\nimportlib.import_module('plugins.' + NAME)\n",
        ),
    }
    entry = entries["/root/solution"]
    paths = (
        "/root/solution/main.py",
        "/root/solution/plugins/__init__.py",
        "/root/solution/plugins/six.py",
        "/root/solution/stray.py",
    )
    entries["/root/solution"] = dataclasses.replace(entry, import_paths=paths)
    named = references("python3 /root/solution/main.py\n", "test.sh")
    assert unreached_modules(entries, named) == ["/root/solution/stray.py"]


def test_a_folder_without_init_named_like_a_regular_module_of_the_image_shadows_nothing() -> None:
    """red team 4, honest-html-folder: ``/root/html`` holds the answer page and the script that
    made it. Without ``__init__`` it is at most a namespace portion, which the path finder
    passes over for the image's regular ``html`` package; not so for a name the image lacks
    (the portion would be the package) or one a namespace package of the image has."""
    ground = Ground(workdir="/root", image_modules=frozenset({"html", "google"}))
    page = [
        Change("/root/html", "added"),
        Change("/root/html/index.html", "added"),
        Change("/root/html/build.py", "added"),
    ]
    assert set(_rule(ground, *page).values()) == {None}
    assert shadow_candidates(classify(page, ground), ground) == {}  # nor a test-time shadow
    package = _rule(ground, *page, Change("/root/html/__init__.py", "added"))
    assert set(package.values()) == {"ground-module"}
    for folder in ("tkinter", "google"):  # not in the image; a namespace package there
        rules = _rule(ground, Change(f"/root/{folder}/x.py", "added"))
        assert rules[f"/root/{folder}/x.py"] == "ground-module", folder


SITE = "/usr/local/lib/python3.11/dist-packages"


def _site_product(*tops: str) -> tuple[WorkProduct, Ground]:
    ground = Ground(workdir="/root", named=references("import requests, yaml\n", "t.py"))
    changes = [Change("/root/answer.yaml", "added")]
    for top in tops:
        changes += [Change(f"{SITE}/{top}", "added"), Change(f"{SITE}/{top}/__init__.py", "added")]
        changes += [Change(f"{SITE}/{top}/_speedups.c", "added")]
    return classify(changes, ground), ground


def test_a_site_package_the_tests_never_reach_is_left_out_whole() -> None:
    # Red team 9: requests tries `import simplejson`; the agent's simplejson in the system site
    # patched pytest from inside the grader though no test names it.
    product, ground = _site_product("simplejson", "brotlicffi")
    site = site_packages(product, ground)
    assert site == {f"{SITE}/simplejson": "simplejson", f"{SITE}/brotlicffi": "brotlicffi"}
    tops = unreached_site_packages(product, ground, site)
    assert tops == [f"{SITE}/brotlicffi", f"{SITE}/simplejson"]
    exclude_site_packages(product, tops)
    assert {c.path for c in product.applied} == {"/root/answer.yaml"}
    left_out = {e.path: e.rule for e in product.excluded if e.rule != "benign"}
    # the whole package: a folder left behind would import as an empty namespace package
    assert left_out[f"{SITE}/simplejson/_speedups.c"] == "unnamed-module"
    assert left_out[f"{SITE}/simplejson"] == "unnamed-module"
    assert product.needs_regrade


def _gate(tests: str, *paths: str, test_sh: str = "") -> bool:
    """Whether the site package simplejson is kept beside the agent's ``paths``."""
    ground = Ground(
        workdir="/root",
        named=references(tests, "test_outputs.py") | references(test_sh, "test.sh"),
        test_files=frozenset({"test_outputs.py", "test.sh", "check_answer.py"}),
    )
    changes = [Change(p, "added") for p in ("/root/answer.yaml", *paths)]
    changes += [Change(f"{SITE}/simplejson", "added")]
    product = classify(changes, ground)
    return unreached_site_packages(product, ground, site_packages(product, ground)) == []


def test_site_packages_stay_only_where_the_verifier_runs_the_agents_code() -> None:
    # the tests import the agent's module: its code runs inside the grader anyway
    assert _gate("import answerlib\n", "/root/answerlib.py")
    assert _gate("from app.core import f\n", "/root/app", "/root/app/core.py")
    # the tests import the installed package itself
    assert _gate("import simplejson\n")
    # a program of the agent's that the tests or test.sh run, by path or through python3
    assert _gate("subprocess.run(['/root/answer', '--x'])\n", "/root/answer")
    assert _gate("subprocess.run('cd /app && python3 -u run.py', shell=True)\n", "/app/run.py")
    assert _gate("", "/app/run.py", test_sh="python3 -W ignore /app/run.py > /root/out\n")
    assert _gate("", "/root/run.sh", test_sh="cd /root && ./run.sh\n")
    # named but not run (red team 10): a file read as text, a word of a message or of `ls`
    assert not _gate("src = open('/root/solution.py').read()\n", "/root/solution.py")
    assert not _gate("assert ok, 'run solve.py first'\n", "/root/solve.py", "/srv/solve.py")
    assert not _gate("", "/root/solve.py", test_sh="ls -la /root/answer.yaml /root/solve.py\n")
    # a module of the agent's the tests do not import opens nothing
    assert not _gate("import yaml\n", "/root/helper.py")
    # the tests' own script, run by its path: an agent's file of that name is not it
    assert not _gate(
        "subprocess.run(['python3', '/tests/check_answer.py'])\n", "/root/check_answer.py"
    )
    assert not _gate("", "/srv/check_answer.py", test_sh="python3 check_answer.py\n")
    # a program run by its absolute path is that path only
    assert not _gate("subprocess.run(['/usr/bin/ffprobe', 'x'])\n", "/srv/ffprobe")


def test_what_runs_is_read_from_shell_and_python() -> None:
    runs = shell_references(
        "A=1 timeout 30 python3 -X dev /app/run.py\nsudo -u x bash ./build.sh && ./bin/tool\n"
        "echo python3 /root/not_run.py | tee x\npython3 -c 'import os'\nuv run python main.py\n"
        "python3 -O -u /app/opt.py\n"
    ).runs
    assert {"/app/run.py", "tool", "main.py", "/app/opt.py"} <= runs
    assert "/root/not_run.py" not in runs
    python = references(
        "subprocess.run(['node', '/root/gen.mjs'])\nos.system('bash /root/a.sh x')\n"
        "asyncio.create_subprocess_exec('python3', '/root/b.py')\nprint('python3 /root/c.py')\n",
        "t.py",
    )
    assert {"/root/gen.mjs", "/root/a.sh", "/root/b.py"} <= python.runs
    assert "/root/c.py" not in python.runs


def test_a_remote_address_names_no_file_of_the_agents() -> None:
    # uv's installer URL: an agent's /root/install.sh is not what test.sh pipes into sh
    refs = shell_references(
        "curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh\n"
        "wget -q 'http://example.org/tools/helper.py' -O /tmp/h\n"
        "python3 /root/run.py\npip3 install --find-links file:///srv/wheels/x.py a\n"
    )
    assert "install.sh" not in refs.files and "helper.py" not in refs.files
    assert "helper" not in refs.modules
    assert {"run.py", "x.py"} <= refs.files
    python = references('URL = "https://example.org/dl/solution.py"\nimport json\n', "t.py")
    assert "solution.py" not in python.files and "solution" not in python.modules


def test_a_module_test_sh_installs_from_the_agents_project_is_not_its_shadow() -> None:
    # Red team 9 (honest): test.sh runs `cd /root/proj && pip3 install .`; the installed
    # answerlib is the project's own module, not a library it shadows.
    ground = Ground(workdir="/root", extra_starts=("/root/proj",))
    changes = [
        Change("/root/proj", "added"),
        Change("/root/proj/answerlib.py", "added"),
        Change("/root/proj/yaml.py", "added"),
        Change("/root/proj/pyproject.toml", "added"),
    ]
    product = classify(changes, ground)
    candidates = shadow_candidates(product, ground)
    assert set(candidates) >= {"/root/proj/answerlib.py", "/root/proj/yaml.py"}
    listing = [
        f"{SITE}\tanswerlib.py",
        f"{SITE}\tanswerlib-1.dist-info",
        f"{SITE}\tanswerlib.py\t/root/proj",
        f"{SITE}\tanswerlib-1.dist-info\t/root/proj",
        f"{SITE}\tyaml",  # a library test.sh's installs brought: still a shadow
        f"{SITE}\tyaml\t/srv/other%20proj",  # installed from another folder: no exemption
    ]
    hit = exclude_test_time_shadows(product, candidates, listing)
    assert hit == ["/root/proj/yaml.py"]
    assert "/root/proj/answerlib.py" in {c.path for c in product.applied}


# threejs-structure-parser: test.sh copies the tests' generator into /root and runs it with
# node; it imports three, and so does the image's input /root/data/object.js it loads.
THREEJS = Ground(workdir="/root", node_dirs=("/opt/scene", "/root", "/root/data"))


@pytest.mark.parametrize(
    "path",
    [
        "/root/data/node_modules",  # a folder or a link of the agent's beside the input
        "/root/data/node_modules/three/package.json",
        "/root/data/node_modules/three/build/three.module.js",
        "/root/data/package.json",  # the input's package scope: type, imports, self-reference
        "/opt/scene/node_modules/@scope/lib/index.js",
        "/opt/node_modules/three/index.js",  # above an image script's folder
        "/opt/package.json",
    ],
)
def test_an_entry_where_node_resolves_a_script_not_the_agents_is_node_module(path: str) -> None:
    assert _rule(THREEJS, Change(path, "added"))[path] == "node-module"
    # an image's package.json changed there is the same
    if path.endswith("package.json"):
        assert _rule(THREEJS, Change(path, "modified"))[path] == "node-module"


@pytest.mark.parametrize(
    "path",
    [
        "/root/output/package.json",  # the agent's own folder: no script of others below it
        "/root/myproj/package.json",
        "/root/data/answer.js",  # a script, not a resolution entry
        "/srv/package.json.bak",
    ],
)
def test_package_scopes_elsewhere_stay_work_product(path: str) -> None:
    assert _rule(THREEJS, Change(path, "added"))[path] is None


@pytest.mark.parametrize(
    "path",
    [
        "/root/output/node_modules/d3/index.js",
        "/tmp/node_modules/d3/dist/d3.min.js",  # data-to-d3's oracle installs d3 in /tmp
        "/root/myproj/node_modules/x/index.js",
        "/root/gt/node_modules",  # where a renamed copy of the tests' generator may run
        "/opt/s/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/node_modules/x/package.json",
    ],
)
def test_every_node_modules_entry_of_the_agents_is_left_out(path: str) -> None:
    """A test.sh or a test can copy the tests' script anywhere and run it: no reading lists
    every such folder, and a project test.sh runs npm in makes its node_modules again."""
    for ground in (THREEJS, Ground(workdir="/root")):
        assert _rule(ground, Change(path, "added"))[path] == "node-module"


def test_deleting_is_no_node_module_and_no_listing_means_no_package_scope_rule() -> None:
    deleted = "/root/data/node_modules/three/index.js"
    assert _rule(THREEJS, Change(deleted, "deleted"))[deleted] is None
    plain = Ground(workdir="/root")  # the image's scripts unknown (no listing)
    scope = "/opt/scene/package.json"
    assert _rule(plain, Change(scope, "added"))[scope] is None


def test_too_many_image_scripts_to_list_makes_every_folder_count() -> None:
    every = Ground(workdir="/root", node_dirs=None)
    path = "/srv/anywhere/package.json"
    assert _rule(every, Change(path, "added"))[path] == "node-module"


def test_the_project_test_sh_runs_npm_in_keeps_its_package_json() -> None:
    """fix-visual-stability: `cd /app; npm install; npm run build` on the agent's project."""
    ground = Ground(
        workdir="/app",
        builds_node_project=True,
        node_dirs=("/app/src", "/app/src/components"),
    )
    assert _rule(ground, Change("/app/package.json", "modified"))["/app/package.json"] is None
    # its node_modules are the image's all the same (ground-config: npm install remakes them)
    nested = "/app/node_modules/left-pad/index.js"
    assert _rule(ground, Change(nested, "added"))[nested] == "ground-config"
    # a package scope of the agent's below it, over the image's scripts, is not the project's
    inner = "/app/src/package.json"
    assert _rule(ground, Change(inner, "added"))[inner] == "node-module"


def test_an_image_service_test_sh_starts_keeps_its_package_json() -> None:
    """react-performance-debugging: `cd /services/api-simulator && npm start`, then the agent's
    project in the working directory /app: the service's start script is the image's."""
    ground = Ground(
        workdir="/app",
        extra_starts=("/services/api-simulator",),
        builds_node_project=True,
        node_dirs=("/services/api-simulator", "/app/src"),
    )
    service = "/services/api-simulator/package.json"
    assert _rule(ground, Change(service, "modified"))[service] == "node-module"
    assert _rule(ground, Change("/app/package.json", "modified"))["/app/package.json"] is None


@pytest.mark.parametrize(
    ("path", "scope"),
    [
        ("/root/data/node_modules", "/root/data"),
        ("/root/data/node_modules/a/node_modules/b/index.js", "/root/data"),
        ("/node_modules/x", "/"),
        ("/opt/x/package.json", "/opt/x"),
        ("/opt/x/package.json5", None),
        ("/opt/x/index.js", None),
    ],
)
def test_node_scope(path: str, scope: str | None) -> None:
    assert node_scope(path) == scope


def test_the_tests_node_scripts_are_found_through_variables_and_options() -> None:
    script = (
        "OUT=/root/gen\n"
        "cp /tests/gen_ground_truth.mjs /root/gen_ground_truth.mjs\n"
        "node /root/gen_ground_truth.mjs\n"
        "node --experimental-vm-modules $OUT/check.js > /dev/null\n"
        "node /root/solution.js\n"  # the agent's script: its project is its own
        "cd /app && node scripts/verify.cjs\n"
    )
    files = {"gen_ground_truth.mjs", "check.js", "verify.cjs", "test.sh"}
    assert node_script_folders(script, files) == ("/root", "/root/gen", "scripts")


# reserves-at-risk-calc's test.sh (shock-analysis-demand and weighted-gdp-calc the same in /root)
CONVERT_SH = """\
if [ -f /root/output/rar_result.xlsx ]; then
    echo "Evaluating Excel formulas with gnumeric..."
    cd /root/output
    ssconvert -S rar_result.xlsx sheet.csv 2>/dev/null || true
fi
mkdir -p /logs/verifier
cd /root
uvx --with pytest==8.4.1 pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
cp /root/output/sheet.csv.* /logs/verifier/ 2>/dev/null || true
"""


def test_what_test_sh_writes_is_read_in_the_folder_it_is_in_by_then() -> None:
    assert verifier_outputs(CONVERT_SH, "/root") == (
        "/root/output/sheet.csv",
        "/root/output/sheet.csv-*",
        "/root/output/sheet.csv.*",
    )
    shock = (
        'cd /root\nssconvert -S "/root/test - demand.xlsx" /root/sheet.csv 2>/dev/null || true\n'
    )
    assert verifier_outputs(shock, "/app") == (
        "/root/sheet.csv",
        "/root/sheet.csv-*",
        "/root/sheet.csv.*",
    )
    pages = "pdftoppm -png /root/report.pdf out/page\nconvert in.png\n"  # one operand: none
    assert verifier_outputs(pages, "/root") == (
        "/root/out/page",
        "/root/out/page-*",
        "/root/out/page.*",
    )
    script = (
        "OUT=/srv/out\n"
        "curl -fL https://x/cs.gz | gzip -d > cs && chmod +x cs && ./cs setup\n"  # in workdir
        'echo done | tee -a "$OUT/log.txt" > /dev/null\n'
        "cd sub && wget -q -O data.bin https://x/d 2>&1\n"
        "pandoc notes.md --output=/srv/notes.html\n"
        "python3 - <<'EOF'\nif a > b:\n    print(1 >> 2)\nEOF\n"  # a heredoc's body: no shell
        "echo 1 > /logs/verifier/reward.txt 2>&1\n"  # the harness's own folder
    )
    assert verifier_outputs(script, "/root") == (
        "/root/cs",
        "/root/sub/data.bin",
        "/srv/notes.html",
        "/srv/out/log.txt",
    )
    assert verifier_outputs("pytest /tests/test_outputs.py -rA\n", "/root") == ()
    assert verifier_outputs("echo 'unclosed > x\n", "/root") == ()  # unreadable: nothing


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("/root/output/sheet.csv.0", "verifier-output"),  # the converter's output, planted
        ("/root/output/sheet.csv.12", "verifier-output"),
        ("/root/output/sheet.csv", "verifier-output"),
        ("/root/output/sheet.csv.0/inner", "verifier-output"),  # a folder in its place
        ("/root/output/rar_result.xlsx", None),  # the agent's own output
        ("/root/output/sheet.csv0", None),
        ("/root/output/sheet.csvx", None),
    ],
)
def test_a_file_test_sh_writes_is_the_verifiers(path: str, rule: str | None) -> None:
    ground = Ground(workdir="/root", verifier_outputs=verifier_outputs(CONVERT_SH, "/root"))
    assert _rule(ground, Change(path, "added"))[path] == rule
    assert _rule(ground, Change(path, "deleted"))[path] is None  # a deletion is no copy of it
    declared = dataclasses.replace(ground, declared=("/root/output",))
    assert _rule(declared, Change(path, "added"))[path] is None  # the task says it is the agent's


def test_is_verifier_output_takes_whole_names_only() -> None:
    outputs = ("/root/a.csv", "/root/a.csv.*")
    assert is_verifier_output("/root/a.csv.1", outputs)
    assert not is_verifier_output("/root/a.csv.", outputs)
    assert not is_verifier_output("/root/a.csvs", outputs)
    assert not is_verifier_output("/root/a", outputs)


def test_a_new_file_that_wins_a_relative_require_over_the_images_is_queried_and_hit(
    tmp_path: Path,
) -> None:
    """CommonJS's require('./X') tries X, X.js, X.json, X.node, then X/: run the real query in
    a shell over a folder standing in for the image's /root/data."""
    data = tmp_path / "root" / "data"
    (data / "lib").mkdir(parents=True)
    (data / "lib" / "index.js").write_text("module.exports = 1\n")
    (data / "parts.json").write_text("[1]\n")
    (data / "object.js").write_text("require('./parts')\n")
    new = {
        "parts.js": True,  # before the image's parts.json
        "parts": True,  # an extensionless file is tried first of all
        "lib.js": True,  # a file before the image's folder
        "object.json": False,  # the image's object.js comes first
        "notes.md": False,  # nothing of the image's named so
        "helper.js": False,
        ".hidden.js": False,
    }
    for name in new:
        (data / name).write_text("module.exports = 7\n")
    root = str(data)
    product = WorkProduct(applied=[Change(f"{root}/{n}", "added") for n in new])
    ground = Ground(workdir="/root", node_dirs=(root,))
    queries = node_shadow_queries(product, ground)
    assert f"{root}/.hidden.js" not in queries  # require names no dot file by a stem
    present = subprocess.run(
        ["sh", "-c", image_module_script(queries)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    added = {c.path for c in product.applied}
    hits = image_module_hits(queries, present, added)
    assert sorted(hits) == sorted(f"{root}/{n}" for n, won in new.items() if won), hits
    # a folder of the image's scripts only: elsewhere the agent's files are its own
    assert node_shadow_queries(product, Ground(workdir="/root", node_dirs=("/srv",))) == {}
    assert node_shadow_queries(product, Ground(workdir="/root")) == {}
    # the agent's own folder beside its own file is no image's
    mine = WorkProduct(
        applied=[Change(f"{root}/mine", "added"), Change(f"{root}/mine.js", "added")]
    )
    (data / "mine").mkdir()
    mine_queries = node_shadow_queries(mine, ground)
    present = subprocess.run(
        ["sh", "-c", image_module_script(mine_queries)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert image_module_hits(mine_queries, present, {f"{root}/mine", f"{root}/mine.js"}) == []


@pytest.mark.parametrize(
    "script",
    [
        "cd /root/output\nCONVERTER=ssconvert\n$CONVERTER -S result.txt sheet.csv || true\n",
        "cd /root/output; echo result.txt | xargs -I{} ssconvert -S {} sheet.csv || true\n",
        "bash -c 'cd /root/output && ssconvert -S result.txt sheet.csv' 2>/dev/null || true\n",
        "timeout 60 env LC_ALL=C ssconvert -S /root/output/result.txt /root/output/sheet.csv\n",
    ],
)
def test_a_converter_run_through_a_variable_a_wrapper_or_a_shell_string_is_read(
    script: str,
) -> None:
    assert "/root/output/sheet.csv.*" in verifier_outputs(script, "/root")


def test_an_office_conversion_writes_the_inputs_stem_in_its_outdir() -> None:
    script = "soffice --headless --convert-to csv:Text --outdir /root/output /root/output/r.xlsx\n"
    assert verifier_outputs(script, "/root") == ("/root/output/r.csv",)
    assert verifier_outputs("cd /srv && libreoffice --convert-to pdf a.docx\n", "/") == (
        "/srv/a.pdf",
    )


def test_a_write_guarded_by_a_test_of_its_target_is_the_agents_where_it_made_one() -> None:
    guarded = "[ -f /root/output/summary.txt ] || echo missing > /root/output/summary.txt\n"
    assert verifier_outputs(guarded, "/root") == ()
    inline = "cd /root\nif [ ! -s out.txt ]; then echo none > out.txt; fi; echo x > log.txt\n"
    assert verifier_outputs(inline, "/app") == ("/root/log.txt",)


def test_the_folders_uv_is_told_to_work_in_are_starts() -> None:
    script = (
        "uv init /root/verify\n"
        "uv --directory /root/verify add pytest==8.4.1\n"
        "uv run --project=/srv/p pytest\n"
        "uv init --python 3.10\n"  # a value, no folder
        'D="${VERIFY_DIR:-/opt/v}"\ncd "$D"\n'
    )
    assert start_folders(script) == ("/opt/v", "/root/verify", "/srv/p")


def test_the_images_pythonpath_folders_are_module_paths() -> None:
    env = (("PYTHONPATH", "/opt/plugins:/opt/lib:relative"), ("PATH", "/usr/bin"))
    assert image_python_paths(env) == ("/opt/plugins", "/opt/lib")
    ground = Ground(workdir="/root", module_paths=image_python_paths(env))
    path = "/opt/plugins/json.py"  # a stdlib name first on every Python's path there
    assert _rule(ground, Change(path, "added"))[path] == "ground-module"
