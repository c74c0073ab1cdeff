"""The a2a bridge: an ACP agent (a subprocess of the worker, outside the sandbox) that lets a
remote purple agent work in the trial's sandbox through the ``skillsbench-shell/v1`` protocol."""
