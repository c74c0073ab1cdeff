"""Purple (participant) agents: A2A servers that play SkillsBench tasks over skillsbench-shell/v1.

Speaks A2A; of this project it imports only the participant protocol the worker publishes
(:mod:`worker.bridge.protocol`, a leaf module).
"""
