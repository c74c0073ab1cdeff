"""The Dockerfile reader used by sandboxes that do not run Docker."""

from __future__ import annotations

import pytest

from worker.sandbox.dockerfile import (
    DOCKER_DEFAULT_PATH,
    Copy,
    DockerfileError,
    Run,
    base_images,
    parse_dockerfile_text,
    substitute,
)


def test_reads_args_env_workdir_copy_and_run() -> None:
    recipe = parse_dockerfile_text(
        "# comment\n"
        "ARG BASE=python:3.11-slim\n"
        "FROM ${BASE}\n"
        "ARG X=1\n"
        'ENV A=$X B="two words" \\\n'
        "    # comment inside a continuation\n"
        "    C=${MISSING:-fallback}\n"
        "ENV LEGACY some value\n"
        "WORKDIR /app\n"
        "WORKDIR sub\n"
        "COPY --chown=1:1 data/ ./data/\n"
        'ADD ["a b", "c", "/opt/"]\n'
        "RUN echo hi \\\n"
        "  && echo there\n"
        'CMD ["x"]\n'
    )
    assert recipe.base == "python:3.11-slim"
    assert recipe.env == {
        "PATH": DOCKER_DEFAULT_PATH,
        "A": "1",
        "B": "two words",
        "C": "fallback",
        "LEGACY": "some value",
    }
    assert recipe.workdir == "/app/sub"
    first, second, run = recipe.steps
    assert isinstance(first, Copy) and isinstance(second, Copy) and isinstance(run, Run)
    assert [(c.sources, c.dest, c.dest_is_dir) for c in (first, second)] == [
        (("data/",), "/app/sub/data", True),
        (("a b", "c"), "/opt", True),
    ]
    assert (run.line, run.command, run.workdir) == (13, "echo hi && echo there", "/app/sub")


def test_build_args_override_defaults() -> None:
    recipe = parse_dockerfile_text("FROM x\nARG V=1\nENV OUT=$V\n", {"V": "2"})
    assert recipe.env == {"PATH": DOCKER_DEFAULT_PATH, "OUT": "2"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("RUN true\n", "line 1: RUN before FROM"),
        ("", "no FROM"),
        ("FROM x\nCOPY --from=build /a /b\n", "line 2: COPY --from is not supported"),
        ("FROM x\nCOPY onlyone\n", "line 2: COPY needs a source and a destination"),
    ],
)
def test_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(DockerfileError, match=message):
        parse_dockerfile_text(text)


def test_substitution_forms() -> None:
    env = {"SET": "v", "EMPTY": ""}
    assert (
        substitute("$SET ${SET} ${UNSET:-d} ${SET:+alt} ${UNSET:+alt} \\$SET", env)
        == "v v d alt  $SET"
    )


def test_base_images_are_every_external_from() -> None:
    text = """\
ARG PY=3.11
ARG DISTRO
FROM --platform=linux/amd64 python:${PY}-slim AS build
ARG PY=3.12
RUN make
FROM scratch AS empty
FROM build
FROM debian:${DISTRO:-bookworm}
FROM python:3.11-slim
"""
    assert base_images(text) == ["python:3.11-slim", "debian:bookworm"]


def test_base_images_match_stage_names_in_any_case() -> None:
    # Docker matches stage names case-insensitively; "BUILD" is no image to look up (and the
    # engine refuses an upper-case reference outright, which would fail the sandbox start).
    text = "FROM python:3.11-slim AS Build\nFROM BUILD\nFROM build AS Second\nFROM second\n"
    assert base_images(text) == ["python:3.11-slim"]
