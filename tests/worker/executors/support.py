"""A real multi-node Ray cluster on this machine for the ``ray`` executor's tests and bench:
``ray.cluster_utils.Cluster`` (one raylet per node, every process bound to 127.0.0.1, no
dashboard). The head offers no sandbox resource, so trials only land on the added nodes."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from worker.executors._ray_node import NODE_DIR_VAR, SANDBOX_RESOURCE

GIB = 1024**3
# Ray picks the address of the machine's interface for its nodes and clients unless told
# otherwise; this keeps all of it, the client included, on the loopback interface. Ray reads
# it when first imported: set before anything here imports ray.
LOOPBACK = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",  # see worker/executors/_ray.py
}
os.environ.update(LOOPBACK)
START_TRIES = 5


def ray_missing() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (the `ray` dependency group / skillsbench-agentbeats[ray])"
    return None


class LocalCluster:
    """Head + sandbox nodes on 127.0.0.1, with the test process connected as the driver."""

    def __init__(self, node_dir: Path) -> None:
        from ray.cluster_utils import Cluster

        self.node_dir = node_dir
        os.environ[NODE_DIR_VAR] = str(node_dir)
        self.cluster = _retry(
            lambda: Cluster(
                initialize_head=True,
                head_node_args={
                    "num_cpus": 0,
                    "include_dashboard": False,
                    "node_ip_address": "127.0.0.1",
                    "object_store_memory": 200 * 1024**2,
                },
            )
        )
        self.nodes: list[Any] = []

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def add_node(self, slots: int = 1, **extra: Any) -> Any:
        """A sandbox node running ``slots`` one-CPU trials at once."""
        node = _retry(
            lambda: self.cluster.add_node(
                num_cpus=slots,
                memory=slots * 2 * GIB,
                resources={SANDBOX_RESOURCE: slots},
                node_ip_address="127.0.0.1",
                object_store_memory=200 * 1024**2,
                **extra,
            )
        )
        self.nodes.append(node)
        self.cluster.wait_for_nodes()
        return node

    def remove_node(self, node: Any) -> None:
        self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.remove(node)

    def connect(self) -> None:
        import ray

        ray.init(
            address=self.address,
            _node_ip_address="127.0.0.1",
            namespace="skillsbench",
            log_to_driver=False,
            configure_logging=False,
        )

    def shutdown(self) -> None:
        import ray

        ray.shutdown()
        self.cluster.shutdown()


def _retry(start: Callable[[], Any]) -> Any:
    """Ray gives a raylet 30 s to register; on a busy machine a start can miss it."""
    for attempt in range(START_TRIES):
        try:
            return start()
        except Exception:
            if attempt == START_TRIES - 1:
                raise
            time.sleep(2)
    raise AssertionError("unreachable")


@contextlib.contextmanager
def local_cluster(node_dir: Path, slots: list[int]) -> Iterator[LocalCluster]:
    cluster = LocalCluster(node_dir)
    try:
        for n in slots:
            cluster.add_node(n)
        cluster.connect()
        yield cluster
    finally:
        cluster.shutdown()
        _detach_sandbox_trees(node_dir)


def _detach_sandbox_trees(node_dir: Path) -> None:
    """The capped trees of trials whose node was removed mid-trial (a lost node never stops its
    sandboxes; on a real cluster they went with the machine, here they share this one)."""
    from worker.sandbox._bubblewrap.writable import TMPFS_NAME, unmount

    under = f"{node_dir}/"
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            left, _, right = line.partition(" - ")
            fields, extra = left.split(), right.split()
            if len(extra) > 1 and extra[1].startswith(TMPFS_NAME) and fields[4].startswith(under):
                points.append(fields[4])
    for point in points:
        unmount(Path(point))


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(proc.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
