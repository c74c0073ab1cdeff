"""Image evidence against a fake OCI registry on loopback speaking the distribution wire format."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from integrations.agentbeats.image_evidence import collect_image_evidence
from integrations.agentbeats.registry import RegistryClient, RegistryError
from leaderboard.image_refs import parse_image_ref, public_image_problems
from leaderboard.readiness_images import check_images_section
from tests.integrations.agentbeats.support import DOCKER_LIST, DOCKER_MANIFEST, FakeRegistry
from tests.support import run_cli, serve_in_thread

AMD64_ARM64 = [("linux", "amd64"), ("linux", "arm64")]


@pytest.fixture
def registry() -> Iterator[FakeRegistry]:
    fake = FakeRegistry()
    with serve_in_thread(fake.app) as url:
        fake.base_url = url
        yield fake


def client_for(fake: FakeRegistry) -> RegistryClient:
    return RegistryClient({"ghcr.io": fake.base_url})


async def test_oci_index_resolves_to_index_digest_and_amd64(registry: FakeRegistry) -> None:
    digest = registry.add_index("acme/green", "latest", AMD64_ARM64)
    async with client_for(registry) as client:
        image = await client.resolve(parse_image_ref("ghcr.io/acme/green:latest"))
    assert image.digest == digest
    assert image.platform == "linux/amd64"
    assert image.pinned == f"ghcr.io/acme/green@{digest}"
    assert image.platform_manifest_digest != digest
    # Anonymous Bearer flow: 401 challenge, token, retry; never any other credential.
    auths = {r["authorization"] for r in registry.requests}
    assert auths <= {None, "Bearer anon-pull-acme/green"}
    assert "application/vnd.oci.image.index.v1+json" in registry.requests[0]["accept"]


async def test_index_entry_that_lies_about_its_platform_fails(registry: FakeRegistry) -> None:
    registry.add_index("acme/green", "liar", [("linux", "amd64")])
    repo = registry.repos["acme/green"]
    # Re-point the amd64 child at an arm64 image: the index claims amd64, the config says arm64.
    arm = registry.add_manifest("acme/green", "arm", "linux", "arm64")
    index = json.loads(repo.manifests["liar"][1])
    index["manifests"][0]["digest"] = arm
    body = json.dumps(index).encode()
    repo.manifests["liar"] = (repo.manifests["liar"][0], body)
    async with client_for(registry) as client:
        with pytest.raises(RegistryError, match="linux/arm64, not linux/amd64"):
            await client.resolve(parse_image_ref("ghcr.io/acme/green:liar"))


async def test_docker_manifest_list(registry: FakeRegistry) -> None:
    digest = registry.add_index("acme/worker", "v1", AMD64_ARM64, media_type=DOCKER_LIST)
    async with client_for(registry) as client:
        image = await client.resolve(parse_image_ref("ghcr.io/acme/worker:v1"))
    assert (image.digest, image.media_type) == (digest, DOCKER_LIST)


async def test_single_manifest_platform_comes_from_config_blob(registry: FakeRegistry) -> None:
    digest = registry.add_manifest(
        "acme/purple", "v1", "linux", "amd64", media_type=DOCKER_MANIFEST
    )
    async with client_for(registry) as client:
        image = await client.resolve(parse_image_ref(f"ghcr.io/acme/purple@{digest}"))
    assert image.digest == digest
    assert any(r["path"].startswith("/v2/acme/purple/blobs/") for r in registry.requests)


async def test_single_manifest_of_another_platform_fails(registry: FakeRegistry) -> None:
    registry.add_manifest("acme/purple", "arm", "linux", "arm64")
    async with client_for(registry) as client:
        with pytest.raises(RegistryError, match="linux/arm64, not linux/amd64"):
            await client.resolve(parse_image_ref("ghcr.io/acme/purple:arm"))


async def test_index_without_amd64_fails(registry: FakeRegistry) -> None:
    registry.add_index("acme/green", "arm", [("linux", "arm64"), ("windows", "amd64")])
    async with client_for(registry) as client:
        with pytest.raises(RegistryError, match=r"no linux/amd64 manifest.*linux/arm64"):
            await client.resolve(parse_image_ref("ghcr.io/acme/green:arm"))


@pytest.mark.parametrize("deny_tokens", [False, True])
async def test_private_image_cannot_pass(deny_tokens: bool) -> None:
    fake = FakeRegistry(deny_private_tokens=deny_tokens)
    with serve_in_thread(fake.app) as url:
        fake.base_url = url
        fake.add_index("acme/secret", "latest", AMD64_ARM64, private=True)
        async with RegistryClient({"ghcr.io": url}) as client:
            with pytest.raises(RegistryError, match="private"):
                await client.resolve(parse_image_ref("ghcr.io/acme/secret:latest"))


async def test_missing_tag_and_wrong_pin(registry: FakeRegistry) -> None:
    registry.add_index("acme/green", "latest", AMD64_ARM64)
    async with client_for(registry) as client:
        with pytest.raises(RegistryError, match="not found"):
            await client.resolve(parse_image_ref("ghcr.io/acme/green:nope"))
        with pytest.raises(RegistryError, match="not found"):
            await client.resolve(parse_image_ref("ghcr.io/acme/green@sha256:" + "0" * 64))


async def test_evidence_lists_every_failing_image(registry: FakeRegistry) -> None:
    registry.add_index("acme/green", "latest", AMD64_ARM64)
    refs = {
        "green": "ghcr.io/acme/green:latest",
        "worker": "ghcr.io/acme/missing:latest",
        "purple": "localhost:5000/acme/purple:latest",
    }
    async with client_for(registry) as client:
        with pytest.raises(ValueError) as info:
            await collect_image_evidence(refs, client)
    assert "worker:" in str(info.value) and "purple:" in str(info.value)
    assert "green:" not in str(info.value)


@pytest.mark.parametrize(
    "ref",
    [
        "acme/green:latest",
        "localhost:5000/acme/green:latest",
        "10.0.0.2:5000/acme/green:latest",
        "registry.internal/acme/green:1",
        "ghcr.io/Acme/Green:latest",
        "https://ghcr.io/acme/green:latest",
    ],
)
async def test_refused_before_resolving_by_the_readiness_image_rules(
    registry: FakeRegistry, ref: str
) -> None:
    """The same rules (and messages) as readiness, except the pin: evidence resolves tags."""
    registry.add_index("acme/green", "latest", AMD64_ARM64)
    registry.add_index("acme/ok", "latest", AMD64_ARM64)
    refs = {"green": ref, "worker": "ghcr.io/acme/ok:latest", "purple": "ghcr.io/acme/ok:latest"}
    async with client_for(registry) as client:
        with pytest.raises(ValueError) as info:
            await collect_image_evidence(refs, client)
    expected = [m for rule, m in public_image_problems(ref) if rule != "image_not_pinned"]
    assert expected
    assert str(info.value) == "image evidence failed: " + "; ".join(f"green: {m}" for m in expected)


def test_cli_writes_evidence_that_passes_the_readiness_image_rules(
    registry: FakeRegistry,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("green", "worker", "purple"):
        registry.add_index(f"acme/skillsbench-{name}", "latest", AMD64_ARM64)
    output = tmp_path / "images.json"
    monkeypatch.setenv("SKILLSBENCH_REGISTRY_URL_OVERRIDES", f"ghcr.io={registry.base_url}")
    args = ["images", "evidence", "--output", str(output)]
    for name in ("green", "worker", "purple"):
        args += [f"--{name}-image", f"ghcr.io/acme/skillsbench-{name}:latest"]
    done = run_cli(capsys, *args)
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    assert data["schema_version"] == "skillsbench.agentbeats.image_evidence.v1"
    assert data["green_image"].startswith("ghcr.io/acme/skillsbench-green@sha256:")
    assert check_images_section({k: v for k, v in data.items() if k != "schema_version"}) == []


def test_cli_private_image_is_one_line_error(registry: FakeRegistry, tmp_path: Path) -> None:
    registry.add_index("acme/secret", "latest", AMD64_ARM64, private=True)
    registry.add_index("acme/ok", "latest", AMD64_ARM64)
    args = [sys.executable, "-m", "skillsbench_agentbeats", "images", "evidence"]
    args += [
        "--green-image",
        "ghcr.io/acme/secret:latest",
        "--worker-image",
        "ghcr.io/acme/ok:latest",
    ]
    args += ["--purple-image", "ghcr.io/acme/ok:latest", "--output", str(tmp_path / "x.json")]
    args += ["--registry-url-override", f"ghcr.io={registry.base_url}"]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "green:" in done.stderr and "private" in done.stderr
    assert not (tmp_path / "x.json").exists()
