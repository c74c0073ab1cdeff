"""``ENV``/``ARG`` expansion of the local sandbox's Dockerfile reader, table-driven, and the same
table checked against what the Docker Engine itself builds (an image per case, cached by tag;
skipped where no engine answers)."""

from __future__ import annotations

import hashlib
import io
import tarfile
from typing import Any

import pytest

from worker.sandbox.dockerfile import (
    DOCKER_DEFAULT_PATH,
    DockerfileError,
    parse_dockerfile_text,
    substitute,
)

P = DOCKER_DEFAULT_PATH

# (case id, lines before FROM, lines after FROM, build args, expected ENV values)
CASES: list[tuple[str, str, str, dict[str, str], dict[str, str]]] = [
    (
        "path-seeded",
        "",
        'ENV PATH="/x:${PATH}"\nENV AFTER=$PATH\n',
        {},
        {"PATH": f"/x:{P}", "AFTER": f"/x:{P}"},
    ),
    (
        "forms",
        "",
        "ARG SET=v\nARG EMPTY=\n"
        "ENV B1=${SET} B2=$SET B3=${NOPE:-d} B4=${EMPTY:-e} B5=${SET:-d} B6=${SET:+alt} "
        "B7=${EMPTY:+alt} B8=${NOPE:+alt} B9=a${SET}b B10=$SET-x B11=${NOPE}x B12=$1x\n",
        {},
        {
            "B1": "v",
            "B2": "v",
            "B3": "d",
            "B4": "e",
            "B5": "v",
            "B6": "alt",
            "B7": "",
            "B8": "",
            "B9": "avb",
            "B10": "v-x",
            "B11": "x",
            "B12": "x",
        },
    ),
    (
        "quotes-and-escapes",
        "",
        "ARG G=g\n"
        'ENV Q1=\'$G\' Q2="$G" Q3=\\$G Q4="a\\"b\\\\c\\d" Q5=pre\\ post Q6="two  words" '
        "Q7='it''s' Q8=\"\\$G\"\n",
        {},
        {
            "Q1": "$G",
            "Q2": "g",
            "Q3": "$G",
            "Q4": 'a"b\\c\\d',
            "Q5": "pre post",
            "Q6": "two  words",
            "Q7": "its",
            "Q8": "$G",
        },
    ),
    (
        "one-line-sees-the-line-before",
        "",
        "ENV A=0\nENV A=1 B=$A C=${A:-unset}\nENV D=$A\nARG X=1 Y=$X\nENV Y=$Y\n",
        {},
        {"A": "1", "B": "0", "C": "0", "D": "1", "Y": ""},
    ),
    (
        "legacy-form",
        "ARG G=global\n",
        'ARG G\nENV L1 hello   "big"  world $G\nENV L2 ${G:+set}\n',
        {},
        {"L1": "hello   big  world global", "L2": "set"},
    ),
    (
        "args-defaults-and-build-args",
        "ARG TOP=top\nARG GIVEN=default\n",
        "ARG TOP\nARG GIVEN\nARG LOCAL=local\nARG BARE\nARG OVER=old\nENV OVER=env\n"
        "ENV T=$TOP G=$GIVEN L=$LOCAL B=${BARE:-unset} O=$OVER\n",
        {"GIVEN": "given", "BARE": "bare"},
        {"T": "top", "G": "given", "L": "local", "B": "bare", "O": "env", "OVER": "env"},
    ),
    (
        "global-args-need-redeclaring",
        "ARG TOP=top\n",
        "ENV T=${TOP:-not-in-stage}\n",
        {},
        {"T": "not-in-stage"},
    ),
]


def _dockerfile(base: str, before: str, after: str) -> str:
    return f"{before}FROM {base}\n{after}"


@pytest.mark.parametrize(
    ("before", "after", "build_args", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_expansion_table(
    before: str, after: str, build_args: dict[str, str], expected: dict[str, str]
) -> None:
    recipe = parse_dockerfile_text(_dockerfile("base", before, after), build_args)
    assert {key: recipe.env.get(key) for key in expected} == expected


def _engine_env(client: Any, dockerfile: str, build_args: dict[str, str]) -> dict[str, str]:
    """The ENV of the image Docker builds from ``dockerfile`` (built once per content)."""
    import docker

    key = hashlib.sha256(repr((dockerfile, sorted(build_args.items()))).encode()).hexdigest()
    tag = f"skillsbench-test/env-expansion:{key[:16]}"
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        data = dockerfile.encode()
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        buffer.seek(0)
        image, _ = client.images.build(
            fileobj=buffer,
            custom_context=True,
            tag=tag,
            buildargs=build_args,
            labels={"skillsbench.test-image": "env-expansion"},
            pull=False,
            rm=True,
        )
    env = image.attrs["Config"].get("Env") or []
    return dict(item.split("=", 1) for item in env)


@pytest.mark.parametrize(
    ("before", "after", "build_args", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_docker_agrees_with_the_table(
    docker_client: Any,
    before: str,
    after: str,
    build_args: dict[str, str],
    expected: dict[str, str],
) -> None:
    from tests.support.docker_images import ensure_test_image

    base = ensure_test_image(docker_client, "busybox")
    env = _engine_env(docker_client, _dockerfile(base, before, after), build_args)
    # An ENV set to "" is kept by Docker as "NAME=": compare with that.
    assert {key: env.get(key) for key in expected} == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${X", "missing '}'"),
        ("${:-x}", "bad substitution"),
        ("${X/a/b}", "unsupported modifier"),
        ("'open", "unmatched single quote"),
        ('"open', "unmatched double quote"),
        ("${X?must be set}", "X: must be set"),
    ],
)
def test_bad_words_are_named(text: str, message: str) -> None:
    with pytest.raises(DockerfileError, match=message):
        substitute(text, {})


def test_more_forms() -> None:
    env = {"F": "a.tar.gz", "E": ""}
    assert substitute("${F%.*} ${F%%.*} ${F#*.} ${F##*.}", env) == "a.tar a tar.gz gz"
    assert substitute("${E-unset} ${N-unset} ${E+set} ${N+set}", env) == " unset set "
    assert substitute("${E:?}x", {"E": "v"}) == "vx"


def test_errors_name_their_line() -> None:
    with pytest.raises(DockerfileError, match=r"line 2: .*missing '}'"):
        parse_dockerfile_text("FROM x\nENV A=${B\n")
    with pytest.raises(DockerfileError, match="line 2: ENV must have two arguments"):
        parse_dockerfile_text("FROM x\nENV A\n")


def test_run_steps_see_the_env_and_args_in_force() -> None:
    recipe = parse_dockerfile_text("FROM x\nARG V=1\nRUN one\nENV V=2 W=3\nRUN two\n")
    first, second = recipe.steps
    assert first.env == {"PATH": P, "V": "1"}  # type: ignore[union-attr]
    assert second.env == {"PATH": P, "V": "2", "W": "3"}  # type: ignore[union-attr]
