"""Command-line entry point that ties the components together.

The components live in their own top-level packages (``task_sets``, ``leaderboard``, ``worker``,
``green_agent``, ``purple_agent``); this package only dispatches to them.
"""

__version__ = "0.1.0"
