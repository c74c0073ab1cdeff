"""``_meta`` keys of our ACP extension, shared by the worker's client and the a2a bridge.

Any other agent can ignore them: without them the client behaves as plain ACP.
"""

WITHIN_KEY = "skillsbench/within"  # fs/*: refuse paths that resolve outside these sandbox folders
STREAMS_KEY = "skillsbench/streams"  # terminal/output: also return stdout and stderr apart
OUTCOME_KEY = "skillsbench/outcome"  # session/prompt result: how the bridge's conversation ended
