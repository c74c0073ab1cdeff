"""The ``docker`` sandbox backend (registered on import); see :mod:`.sandbox`."""

from worker.sandbox._docker.sandbox import DockerSandbox

__all__ = ["DockerSandbox"]
