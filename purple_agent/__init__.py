"""Purple (participant) agents: A2A servers that play SkillsBench tasks over skillsbench-shell/v1.

Speaks A2A only and imports nothing else from this project, so other components (the worker's
bridge) may import :mod:`purple_agent.protocol` without pulling in agents.
"""
