"""The bubblewrap sandbox backend, registered as ``local`` (what users pass to
``--environment``); see :mod:`.sandbox`."""

from worker.sandbox._bubblewrap.sandbox import BubblewrapConfig, BubblewrapSandbox

__all__ = ["BubblewrapConfig", "BubblewrapSandbox"]
