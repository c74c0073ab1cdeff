"""`manifests check`: our manifests pass, the published ones behave as under `amber check`, and
every rule has a failing example."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import json5
import pytest

from integrations.agentbeats.amber import RULES, check_manifests, deny_lints
from tests.integrations.agentbeats.amber_examples import NO_AMBER, local_examples, real_amber
from tests.support import PUBLISHED_DATA, REPO_ROOT

OURS = REPO_ROOT / "integrations" / "agentbeats"
AMBER = PUBLISHED_DATA / "amber"
PREFIX = "skillsbench-agentbeats__"
Doc = dict[str, Any]
KNOB = "$.config_schema.properties.unused_knob"


def load(path: Path) -> Doc:
    data: Doc = json5.loads(path.read_text())
    return data


def test_our_manifests_pass_with_warnings_denied() -> None:
    files = sorted(OURS.glob("*.json5"))
    assert len(files) == 6
    assert deny_lints(check_manifests(files), ["warnings"]) == []


def test_published_green_manifest_is_clean() -> None:
    # Its `worker` slot is never read, but it is optional: Amber v0.4 lints no optional slot.
    assert check_manifests([AMBER / f"{PREFIX}green-agent.json5"]) == []


def _with_unused_config(tmp_path: Path) -> Path:
    # (An unused slot of a root with a program is no lint: Amber binds it weak from outside.)
    doc = load(OURS / "worker.json5")
    doc["config_schema"]["properties"]["unused_knob"] = {"type": "string", "default": ""}
    target = tmp_path / "worker.json5"
    target.write_text(json.dumps(doc))
    return target


def test_deny_by_amber_code_or_bare_name(tmp_path: Path) -> None:
    findings = check_manifests([_with_unused_config(tmp_path)])
    assert [(f.rule, f.path, f.severity) for f in findings] == [
        ("manifest::unused_config", KNOB, "warning")
    ]
    assert [f.severity for f in deny_lints(findings, ["warnings"])] == ["error"]
    assert deny_lints(findings, ["manifest::unused_config"])[0].severity == "error"
    assert deny_lints(findings, ["unused_config"])[0].severity == "error"
    assert deny_lints(findings, ["manifest::unused_provide"])[0].severity == "warning"
    assert deny_lints(findings, ["manifest::required_slot_when_env"])[0].severity == "warning"


def test_other_published_manifests_are_clean(tmp_path: Path) -> None:
    for path in AMBER.glob(f"{PREFIX}*.json5"):
        shutil.copy(path, tmp_path / path.name.removeprefix(PREFIX))
    files = [AMBER / "agentbeats-gateway__amber-manifest.json5"] + [
        tmp_path / name
        for name in (
            "worker.json5",
            "participant-placeholder.json5",
            "participant-agent-under-test.json5",
            "scenario.json5",
            "scenario-agent-under-test-smoke.json5",
        )
    ]
    assert check_manifests(files) == []


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "manifests", "check", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


FAKE_AMBER = """#!/bin/sh
# A stand-in for the Amber CLI (CI cannot build the real one): records its arguments, prints a
# diagnostic and exits with $FAKE_AMBER_EXIT.
printf '%s\\n' "$@" >> "$FAKE_AMBER_LOG"
echo "fake amber: checked $*"
exit "${FAKE_AMBER_EXIT:-0}"
"""


def _fake_amber(tmp_path: Path, exit_code: int) -> tuple[dict[str, str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    amber = bin_dir / "amber"
    amber.write_text(FAKE_AMBER)
    amber.chmod(0o755)
    log = tmp_path / "amber.log"
    env = {k: v for k, v in os.environ.items() if k != "AMBER"}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        FAKE_AMBER_LOG=str(log),
        FAKE_AMBER_EXIT=str(exit_code),
    )
    return env, log


def test_cli_runs_the_real_amber_check_when_on_path(tmp_path: Path) -> None:
    env, log = _fake_amber(tmp_path, 0)
    worker, green = OURS / "worker.json5", OURS / "green-agent.json5"
    done = cli(worker, green, "-D", "unused_slot", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    amber = tmp_path / "bin" / "amber"
    assert f"checker: amber {amber} (from PATH), then ours" in done.stdout
    assert f"fake amber: checked check -D manifest::unused_slot {worker}" in done.stdout
    assert f"amber check {worker}: exit 0 (ok)" in done.stdout
    assert f"amber check {green}: exit 0 (ok)" in done.stdout
    assert "ok (amber check and ours): 2 manifest(s)" in done.stdout
    assert log.read_text().split() == [
        *("check", "-D", "manifest::unused_slot", str(worker)),
        *("check", "-D", "manifest::unused_slot", str(green)),
    ]


def test_cli_fails_when_amber_check_fails(tmp_path: Path) -> None:
    env, _ = _fake_amber(tmp_path, 1)
    worker = OURS / "worker.json5"
    done = cli(worker, env=env)
    assert done.returncode == 1
    assert f"amber check {worker}: exit 1 (failed)" in done.stdout
    assert "amber check failed on 1 file(s)" in done.stderr
    # --checker ours does not run it; $AMBER names the executable explicitly.
    assert cli(worker, "--checker", "ours", env=env).returncode == 0
    named = {**env, "PATH": os.defpath, "AMBER": str(tmp_path / "bin" / "amber")}
    done = cli(worker, env=named)
    assert done.returncode == 1 and "(from $AMBER)" in done.stdout


@pytest.mark.skipif(real_amber() is None, reason=NO_AMBER)
def test_cli_auto_runs_the_installed_amber(tmp_path: Path) -> None:
    # `--checker auto` with the real Amber CLI on PATH: the six examples (gateway made local, so
    # nothing is fetched) pass both checks with warnings denied; an unused config property fails both.
    amber = real_amber()
    assert amber is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "amber").symlink_to(Path(amber).resolve())
    env = {k: v for k, v in os.environ.items() if k != "AMBER"}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1")
    examples = tmp_path / "examples"
    examples.mkdir()
    files = local_examples(examples)
    done = cli(*files, "-D", "warnings", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"checker: amber {bin_dir / 'amber'} (from PATH), then ours" in done.stdout
    for file in files:
        assert f"amber check {file}: exit 0 (ok)" in done.stdout
    assert f"ok (amber check and ours): {len(files)} manifest(s), 0 warning(s)" in done.stdout
    target = _with_unused_config(tmp_path)
    done = cli(target, "-D", "warnings", env=env)
    assert done.returncode == 1
    assert "manifest::unused_config" in done.stdout
    assert f"amber check {target}: exit 1 (failed)" in done.stdout
    assert f"error: {target}: {KNOB}: [manifest::unused_config]" in done.stdout


def test_cli_amber_setting_errors_are_one_line(tmp_path: Path) -> None:
    worker = OURS / "worker.json5"
    env = {**os.environ, "AMBER": str(tmp_path / "no-amber")}
    done = cli(worker, env=env)
    assert done.returncode == 2 and "AMBER=" in done.stderr and done.stderr.count("\n") == 1
    bare = {k: v for k, v in os.environ.items() if k != "AMBER"}
    bare["PATH"] = str(tmp_path)  # neither amber nor docker
    done = cli(worker, "--checker", "amber", env=bare)
    assert done.returncode == 2 and done.stderr.startswith("error: --checker amber: no Amber CLI")
    done = cli(worker, env=bare)
    assert done.returncode == 0
    assert "checker: ours only (no Amber CLI" in done.stdout


def test_cli_warning_passes_unless_denied(tmp_path: Path) -> None:
    target = _with_unused_config(tmp_path)
    done = cli(target, "--checker", "ours")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"warning: {target}: {KNOB}: [manifest::unused_config]" in done.stdout
    done = cli(target, "--checker", "ours", "-D", "warnings")
    assert done.returncode == 1
    assert f"error: {target}: {KNOB}: [manifest::unused_config]" in done.stdout
    done = cli(target, "--checker", "ours", "-D", "manifest::required_slot_when_env")
    assert done.returncode == 0, done.stderr


def test_cli_unknown_lint_is_one_line(tmp_path: Path) -> None:
    done = cli(OURS / "worker.json5", "--checker", "ours", "-D", "no_such_lint")
    assert done.returncode == 2 and done.stderr.count("\n") == 1


# --- failing examples ------------------------------------------------------------------------

Mutation = Callable[[Doc], None]


def _set(path: str, value: Any) -> Mutation:
    keys = path.split(".")

    def mutate(doc: Doc) -> None:
        node: Any = doc
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if isinstance(node, list):
            node[int(keys[-1])] = value
        else:
            node[keys[-1]] = value

    return mutate


def _env(name: str, value: Any) -> Mutation:
    return lambda doc: doc["program"]["env"].__setitem__(name, value)


def _prop(name: str, schema: Any) -> Mutation:
    return lambda doc: doc["config_schema"]["properties"].__setitem__(name, schema)


def _all(*mutations: Mutation) -> Mutation:
    def mutate(doc: Doc) -> None:
        for m in mutations:
            m(doc)

    return mutate


def _binding(binding: Doc) -> Mutation:
    return lambda doc: doc["bindings"].append(binding)


def _del(path: str) -> Mutation:
    keys = path.split(".")

    def mutate(doc: Doc) -> None:
        node: Any = doc
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return mutate


# (rule, manifest to start from, mutation, expected path or None)
FAILING: list[tuple[str, str, Mutation, str | None]] = [
    ("unknown_top_level_key", "worker", _set("programme", {}), "$.programme"),
    ("manifest_version", "worker", _del("manifest_version"), "$.manifest_version"),
    ("manifest_version", "worker", _set("manifest_version", "0.4"), "$.manifest_version"),
    ("manifest_version", "worker", _set("manifest_version", "1.0.0"), "$.manifest_version"),
    (
        "experimental_feature",
        "worker",
        _set("experimental_features", ["docker", "gpu"]),
        "$.experimental_features[1]",
    ),
    (
        "version_gate",
        "worker",
        _set("manifest_version", "0.1.0"),
        "$.program.env.SKILLSBENCH_WORKER_PREBUILT_IMAGES.when",
    ),
    (
        "version_gate",
        "worker",
        _all(
            _set("manifest_version", "0.2.0"),
            _env("X", {"each": "slots.proxy", "value": "${item.url}"}),
        ),
        "$.program.env.X.each",
    ),
    (
        "version_gate",
        "scenario",
        _all(_set("manifest_version", "0.3.0"), _set("overlays", ["#wrapper.overlay"])),
        "$.overlays[0]",
    ),
    ("config_schema", "worker", _set("config_schema.type", "array"), "$.config_schema.type"),
    (
        "config_schema",
        "worker",
        _prop("Jobs__dir", {"type": "string"}),
        "$.config_schema.properties.Jobs__dir",
    ),
    (
        "config_schema",
        "worker",
        _prop("mode", {"anyOf": [{"type": "string"}]}),
        "$.config_schema.properties.mode.anyOf",
    ),
    (
        "config_schema",
        "worker",
        _set("config_schema.additionalProperties", {"type": "string"}),
        "$.config_schema.additionalProperties",
    ),
    ("config_schema", "worker", _prop("x", {"$ref": "https://example.com/s.json"}), None),
    (
        "config_schema",
        "worker",
        _prop("opts", {"properties": {"a": {"type": "string"}}}),
        "$.config_schema.properties.opts",
    ),
    ("endpoint_name", "worker", _set("program.network.endpoints", [{"port": 1}]), None),
    (
        "duplicate_endpoint",
        "worker",
        _set(
            "program.network.endpoints", [{"name": "http", "port": 1}, {"name": "http", "port": 2}]
        ),
        "$.program.network.endpoints[1].name",
    ),
    (
        "name_dot",
        "worker",
        _set("slots", {"pro.xy": {"kind": "a2a", "optional": True}}),
        '$.slots["pro.xy"]',
    ),
    (
        "slot_provide_conflict",
        "worker",
        _set("slots.http", {"kind": "http", "optional": True}),
        "$.provides.http",
    ),
    ("capability_kind", "worker", _set("slots.proxy.kind", "grpc"), "$.slots.proxy.kind"),
    ("capability_kind", "worker", _set("provides.http.kind", "storage"), "$.provides.http.kind"),
    ("provide_key", "worker", _set("provides.http.port", 9010), "$.provides.http.port"),
    (
        "provide_endpoint",
        "worker",
        _set("provides.http.endpoint", "web"),
        "$.provides.http.endpoint",
    ),
    ("provide_endpoint", "worker", _del("provides.http.endpoint"), "$.provides.http"),
    ("program_shape", "worker", _set("program.path", "./bin/worker"), "$.program"),
    ("program_shape", "worker", _del("program.entrypoint"), "$.program"),
    ("unresolved_config", "worker", _env("X", "${config.job_dir}"), "$.program.env.X"),
    (
        "unresolved_config",
        "worker",
        _set("program.entrypoint.7", "${config.jobs_dir.sub}"),
        "$.program.entrypoint[7]",
    ),
    ("unresolved_slot", "worker", _env("X", "${slots.llm.url}"), "$.program.env.X"),
    (
        "unresolved_slot",
        "worker",
        _env("X", {"when": "slots.proxy", "value": "${slots.proxy.host}"}),
        "$.program.env.X.value",
    ),
    ("interpolation_source", "worker", _env("X", "${env.HOME}"), "$.program.env.X"),
    ("unresolved_item", "worker", _env("X", "${item.url}"), "$.program.env.X"),
    (
        "mount",
        "worker",
        _set("program.mounts", [{"path": "run/sock", "from": "framework.docker"}]),
        "$.program.mounts[0].path",
    ),
    (
        "mount",
        "worker",
        _set("program.mounts", [{"path": "/data", "from": "slots.proxy"}]),
        "$.program.mounts[0].from",
    ),
    (
        "framework_capability",
        "worker",
        _set("experimental_features", []),
        "$.program.mounts[0].from",
    ),
    (
        "framework_capability",
        "worker",
        _set("program.mounts", [{"path": "/x", "from": "framework.gpu"}]),
        None,
    ),
    ("export_target", "worker", _set("exports.http", "provides.api"), "$.exports.http"),
    ("export_target", "scenario", _set("exports.results", "#nobody.results"), "$.exports.results"),
    (
        "binding",
        "scenario",
        _binding({"to": "gateway.green", "from": "#skillsbench_green.a2a"}),
        "$.bindings[3].to",
    ),
    (
        "binding",
        "scenario",
        _binding({"to": "#gateway.green", "from": "nowhere.a2a"}),
        "$.bindings[3].from",
    ),
    (
        "binding",
        "scenario",
        _binding({"to": "#ghost.slot", "from": "#skillsbench_green.a2a"}),
        "$.bindings[3].to",
    ),
    ("binding", "scenario", _binding({"from": "#skillsbench_green.a2a"}), "$.bindings[3]"),
    (
        "binding_slot",
        "scenario-worker-local",
        _binding({"to": "#skillsbench_green.llm", "from": "#skillsbench_worker.http"}),
        "$.bindings[5].to",
    ),
    (
        "binding_kind",
        "scenario-worker-local",
        _set("bindings.3.from", "#baseline_agent.a2a"),
        "$.bindings[3]",
    ),
    (
        "binding_source",
        "scenario",
        _set("bindings.1.from", "#baseline_agent.http"),
        "$.bindings[1].from",
    ),
    (
        "child_manifest",
        "scenario",
        _set("components.baseline_agent.manifest", "./missing.json5"),
        "$.components.baseline_agent",
    ),
    (
        "child_feature",
        "scenario-worker-local",
        _set("experimental_features", []),
        "$.components.skillsbench_worker",
    ),
    (
        "linker::unbound_slot",
        "scenario",
        lambda d: d["bindings"].pop(2),
        "$.components.skillsbench_green",
    ),
    (
        "linker::unbound_slot",
        "scenario",
        _set("slots", {"llm": {"kind": "llm"}}),
        "$.slots.llm",
    ),
    (
        "linker::external_slot_requires_weak",
        "scenario-worker-local",
        _all(
            _set("slots", {"upstream": {"kind": "a2a"}}),
            _set("bindings.4", {"to": "#skillsbench_worker.proxy", "from": "slots.upstream"}),
        ),
        "$.bindings[4]",
    ),
    (
        "child_config",
        "scenario",
        _set("components.skillsbench_green.config.worker_uri", ""),
        "$.components.skillsbench_green.config.worker_uri",
    ),
    (
        # A root's own slots are linted only when linking fails (Amber binds them weak otherwise).
        "manifest::unused_slot",
        "worker",
        _all(
            _set("slots.llm", {"kind": "llm"}),
            _set("program.entrypoint.7", "${config.jobs_dir.sub}"),
        ),
        "$.slots.llm",
    ),
    ("manifest::unused_provide", "worker", _set("exports", {}), "$.provides.http"),
    ("manifest::unused_program", "participant-placeholder", _set("exports", {}), "$.program"),
    ("section_type", "worker", _set("exports", []), "$.exports"),
    ("section_type", "scenario", _set("bindings", {}), "$.bindings"),
    (
        "binding",
        "scenario-worker-local",
        _set("bindings.2.weak", "yes"),
        "$.bindings[2].weak",
    ),
    (
        "linker::invalid_export",
        "scenario",
        _set("exports.results", "#skillsbench_green.nope"),
        "$.exports.results",
    ),
    (
        "linker::invalid_export",
        "scenario",
        _all(
            _set("slots", {"api": {"kind": "http", "optional": True}}), _set("exports.api", "api")
        ),
        "$.exports.api",
    ),
    (
        "linker::invalid_config",
        "scenario-worker-local",
        _all(
            _set("slots", {"up": {"kind": "http", "optional": True}}),
            _set("components.skillsbench_green.config.worker_url", "${slots.up.url}"),
        ),
        "$.components.skillsbench_green.config.worker_url",
    ),
    (
        "manifest::unused_use",
        "scenario",
        _set("use", {"wrapper": "./participant-placeholder.json5"}),
        "$.use.wrapper",
    ),
    # Amber v0.4 refuses both (a warning here once): a cyclic $ref fails its config analysis,
    # a dangling one its JSON Schema validator (manifest::invalid_config_schema).
    ("config_schema", "worker", _prop("loop", {"$ref": "#/properties/loop"}), "$.config_schema"),
    ("config_schema", "worker", _prop("gone", {"$ref": "#/$defs/gone"}), "$.config_schema"),
    (
        "config_schema",
        "worker",
        _set("config_schema.properties.jobs_dir.type", "strng"),
        "$.config_schema.properties.jobs_dir.type",
    ),
    (
        "manifest::duplicate_environment_resolver",
        "worker",
        _set("environments", {"prod": {"resolvers": ["registry", "registry"]}}),
        "$.environments.prod.resolvers[1]",
    ),
    (
        "manifest::unused_config",
        "worker",
        _prop("unused_knob", {"type": "string", "default": ""}),
        "$.config_schema.properties.unused_knob",
    ),
    (
        "manifest::optional_env_config",
        "worker",
        _env("SKILLSBENCH_WORKER_PREBUILT_IMAGES", "${config.prebuilt_images}"),
        "$.program.env.SKILLSBENCH_WORKER_PREBUILT_IMAGES",
    ),
    (
        "manifest::optional_command_config",
        "worker",
        _set("program.entrypoint.9", "${config.sandbox_participant_proxy_url}"),
        "$.program.entrypoint[9]",
    ),
    (
        "manifest::optional_mount_config",
        "worker",
        _set("program.mounts", [{"path": "/etc/images.json", "from": "config.prebuilt_images"}]),
        "$.program.mounts[0].from",
    ),
    (
        "manifest::required_slot_when_env",
        "green-agent",
        _env("X", {"when": "slots.proxy", "value": "${slots.proxy.url}"}),
        "$.program.env.X.when",
    ),
    (
        "manifest::required_slot_when",
        "green-agent",
        lambda d: d["program"]["entrypoint"].append(
            {"when": "slots.proxy", "argv": ["--x", "${slots.proxy.url}"]}
        ),
        "$.program.entrypoint[6].when",
    ),
    (
        "manifest::deprecated_export_self_target",
        "worker",
        _set("exports.http", "self.http"),
        "$.exports.http",
    ),
    (
        "manifest::deprecated_binding_self_source",
        "scenario",
        _all(
            _set("slots", {"up": {"kind": "a2a"}}),
            _binding({"to": "#gateway.purple2", "from": "self.up"}),
        ),
        "$.bindings[3].from",
    ),
]


@pytest.fixture
def manifests_dir(tmp_path: Path) -> Path:
    for path in OURS.glob("*.json5"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


@pytest.mark.parametrize(
    ("rule", "base", "mutate", "path"),
    FAILING,
    ids=[f"{i}-{r}" for i, (r, *_) in enumerate(FAILING)],
)
def test_failing_example(
    rule: str, base: str, mutate: Mutation, path: str | None, manifests_dir: Path
) -> None:
    target = manifests_dir / f"{base}.json5"
    doc = copy.deepcopy(load(target))
    mutate(doc)
    target.write_text(json.dumps(doc, indent=2))
    findings = check_manifests([target])
    hits = [f for f in findings if f.rule == rule]
    assert hits, f"expected {rule}, got {[f.render() for f in findings]}"
    assert all(f.file == str(target) for f in hits)
    if path is not None:
        assert path in {f.path for f in hits}, [f.render() for f in hits]
    expected = "warning" if rule.startswith("manifest::") else "error"
    assert {f.severity for f in hits} == {expected}
    if rule.startswith("manifest::deprecated_"):
        # A deprecated-but-valid self reference still resolves: nothing looks unused because of it.
        unused = {"manifest::unused_slot", "manifest::unused_provide", "manifest::unused_program"}
        assert not [f.render() for f in findings if f.rule in unused]


def _write(directory: Path, name: str, doc: Doc) -> Path:
    target = directory / name
    target.write_text(json.dumps(doc, indent=2))
    return target


def test_empty_overlays_need_no_version_gate(manifests_dir: Path) -> None:
    doc = load(manifests_dir / "scenario.json5")
    doc["manifest_version"] = "0.3.0"
    doc["overlays"] = []
    doc["use"] = {}
    assert check_manifests([_write(manifests_dir, "scenario.json5", doc)]) == []


def test_child_lints_follow_the_scenario(manifests_dir: Path) -> None:
    """In a scenario a child's weak-bound slot is not `unused_slot`, and a child whose program
    reads a slot bound from the root's own slots is not `unused_program` (Amber's suppressions);
    checked on its own, as a root with a program, all its slots are bound weak from outside, so
    the same holds; bound strong, its unread slot is linted (all as the real `amber check`)."""
    child = load(manifests_dir / "participant-placeholder.json5")
    child["slots"] = {"upstream": {"kind": "a2a"}, "spare": {"kind": "a2a"}}
    child["program"]["env"] = {"UPSTREAM": "${slots.upstream.url}"}
    child["exports"] = {}
    child_path = _write(manifests_dir, "child.json5", child)
    alone = {(f.rule, f.path) for f in check_manifests([child_path])}
    assert alone == {("manifest::unused_provide", "$.provides.a2a")}
    root = {
        "manifest_version": "0.4.0",
        "slots": {"outside": {"kind": "a2a"}},
        "components": {"c": "./child.json5", "d": "./participant-placeholder.json5"},
        "bindings": [
            {"to": "#c.upstream", "from": "slots.outside", "weak": True},
            {"to": "#c.spare", "from": "#d.a2a", "weak": True},
        ],
    }
    found = check_manifests([_write(manifests_dir, "root.json5", root)])
    assert {(f.rule, f.path) for f in found} == {("manifest::unused_provide", "$.provides.a2a")}
    del root["bindings"][1]["weak"]
    found = check_manifests([_write(manifests_dir, "root.json5", root)])
    assert {(f.rule, f.path) for f in found} == {
        ("manifest::unused_slot", "$.slots.spare"),
        ("manifest::unused_provide", "$.provides.a2a"),
    }


def test_parse_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json5"
    broken.write_text("{ manifest_version: '0.4.0', program: { ")
    dupes = tmp_path / "dupes.json5"
    dupes.write_text("{ manifest_version: '0.4.0', slots: {}, slots: {} }")
    array = tmp_path / "array.json5"
    array.write_text("[1, 2]")
    findings = check_manifests([broken, dupes, array])
    assert [(f.file, f.rule) for f in findings] == [
        (str(broken), "parse"),
        (str(dupes), "duplicate_key"),
        (str(array), "parse"),
    ]


def test_every_rule_has_a_failing_example() -> None:
    assert {rule for rule, *_ in FAILING} | {"parse", "duplicate_key"} == set(RULES)


@pytest.mark.parametrize("scenario", ["scenario.json5", "scenario-worker-local.json5"])
def test_scenario_assessment_config_selects_packaged_tasks(scenario: str) -> None:
    from task_sets.config import parse_config, select_tasks

    gateway = load(OURS / scenario)["components"]["gateway"]["config"]
    assert gateway["participant_roles"] == {"green": "skillsbench_green", "purple1": "agent"}
    selection = select_tasks(parse_config(gateway["assessment_config"]))
    assert selection.task_set == "examples" and selection.tasks


def test_worker_slot_is_bound_only_in_the_worker_local_scenario() -> None:
    def green_worker_bindings(name: str) -> list[Doc]:
        return [b for b in load(OURS / name)["bindings"] if b["to"] == "#skillsbench_green.worker"]

    assert green_worker_bindings("scenario.json5") == []
    assert green_worker_bindings("scenario-worker-local.json5") == [
        {"to": "#skillsbench_green.worker", "from": "#skillsbench_worker.http"}
    ]
    for name in ("scenario.json5", "scenario-worker-local.json5"):
        assert load(OURS / name)["components"]["skillsbench_green"]["config"]["worker_url"] == ""
    env = load(OURS / "green-agent.json5")["program"]["env"]
    assert env["SKILLSBENCH_WORKER_SLOT_URL"] == {
        "when": "slots.worker",
        "value": "${slots.worker.url}",
    }


def test_amber_cli_lookup_order_and_image_command(tmp_path: Path) -> None:
    from integrations.agentbeats.amber_cli import AMBER_IMAGE, AmberCli, find_amber

    env, _ = _fake_amber(tmp_path, 0)
    on_path = find_amber(env)
    assert on_path is not None and on_path.source == "PATH"
    other = tmp_path / "other-amber"
    other.write_text("#!/bin/sh\nexit 0\n")
    other.chmod(0o755)
    named = find_amber({**env, "AMBER": str(other)})
    assert named is not None and (named.source, named.executable) == ("AMBER", str(other))
    assert find_amber({"PATH": str(tmp_path / "empty")}) is None  # no amber, no docker
    image = AmberCli("image", image=f"{AMBER_IMAGE}:v0.4")
    manifest = tmp_path / "scenario.json5"
    assert image.check_command(manifest, ["warnings"]) == [
        *("docker", "run", "--rm", "--entrypoint", "/amber"),
        *("-v", f"{tmp_path}:{tmp_path}:ro", "-w", str(tmp_path)),
        *(f"{AMBER_IMAGE}:v0.4", "check", "-D", "warnings", str(manifest)),
    ]
    assert "local image" in image.describe()
