"""How long the work-product rules take to sort a trial's changes (``classify``), and to judge
its links where their copies land (``linked_folder_rules``): both run on every trial whose
agent changed something, before its verifier, so their cost is the grade's.

A work product of ``--projects`` folders of ``--modules`` modules each (a vendored tree, a
virtual environment's worth), plus ``--links`` links to folders of it; the median of
``--repeat`` runs, in seconds and microseconds a change.

    uv run --frozen python bench/work_product_rules.py [--projects 200] [--modules 100] \
        [--links 50] [--repeat 5] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the project, whatever the cwd

from worker.sandbox.tamper import Change  # noqa: E402
from worker.trial.work_product import Ground, classify, linked_folder_rules  # noqa: E402


def changes(projects: int, modules: int) -> list[Change]:
    found = []
    for i in range(projects):
        found += [Change(f"/root/proj{i}", "added"), Change(f"/root/proj{i}/pkg", "added")]
        found += [Change(f"/root/proj{i}/pkg/mod{j}.py", "added") for j in range(modules)]
        found.append(Change(f"/root/proj{i}/pkg/json.py", "added"))  # left out: a shadow
    return found


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--modules", type=int, default=100)
    parser.add_argument("--links", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="a few small runs")
    args = parser.parse_args()
    if args.smoke:
        args.projects, args.modules, args.links, args.repeat = 10, 10, 5, 2
    ground = Ground(
        workdir="/root",
        extra_starts=("/app",),
        image_modules=frozenset({"numpy", "pandas"}),
        installed_modules=frozenset({"pytest"}),
        # the node and verifier-output rules on: scripts of the image's in a few hundred folders
        node_dirs=tuple(f"/srv/site{i}/js" for i in range(300)),
        verifier_outputs=("/root/output/sheet.csv", "/root/output/sheet.csv.*"),
    )
    work = changes(args.projects, args.modules)
    sorted_out = classify(work, ground)
    assert sorted_out.excluded, "the planted shadows must be left out"
    seconds = median_seconds(lambda: classify(work, ground), args.repeat)
    print(
        f"classify: {len(work)} changes, median {seconds:.3f} s "
        f"({seconds / len(work) * 1e6:.1f} us a change), {len(sorted_out.excluded)} left out"
    )
    links = {f"/srv/link{i}": f"/root/proj{i % args.projects}" for i in range(args.links)}
    paths = [c.path for c in work]
    judged = linked_folder_rules(links, paths, ground)
    seconds = median_seconds(lambda: linked_folder_rules(links, paths, ground), args.repeat)
    print(
        f"linked_folder_rules: {len(links)} links over {len(paths)} paths, median "
        f"{seconds:.3f} s, {len(judged)} left out"
    )


if __name__ == "__main__":
    main()
