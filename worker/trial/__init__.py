"""One trial, start to finish (:mod:`worker.trial.lifecycle`): the sandbox, the agent, the
verifier and its hardening (:mod:`~worker.trial.verifier`), the work product rule
(:mod:`~worker.trial.work_product`) and the regrade of a pass on a fresh sandbox
(:mod:`~worker.trial.regrade`). What the rest of the worker uses is re-exported here."""

from worker.trial.lifecycle import TrialOutcome, TrialPlan, run_trial

__all__ = ["TrialOutcome", "TrialPlan", "run_trial"]
