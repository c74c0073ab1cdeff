"""Command groups whose sub-commands come from more than one component.

``readiness``: ``validate`` (the leaderboard's readiness validators) and ``assemble`` (AgentBeats
evidence assembly). ``images``: ``evidence`` (AgentBeats image evidence), ``build-tasks``
(task environment images, built by the worker's docker sandbox) and ``build-base`` (the local
base image of the service images, for an engine without a registry). ``manifests``: the Amber checks
with the check that our manifests agree with our code.
"""

from __future__ import annotations

import click

from integrations.agentbeats.cli import assemble, build_base, evidence, manifests_group
from leaderboard.readiness_cli import validate
from skillsbench_agentbeats.manifest_code import check_code_agreement
from worker.service.prebuilt_cli import build_tasks

readiness = click.Group(
    "readiness",
    commands=[validate, assemble],
    help="Validate or assemble public-readiness evidence.",
)

images = click.Group(
    "images",
    commands=[evidence, build_tasks, build_base],
    help="Image evidence, task environment images and the local base image.",
)

manifests = manifests_group(check_code_agreement)
