"""The per-run event stream: a ``status`` event first, a ``row`` per finished trial (past ones
replayed to a late subscriber), ``end`` when the run is terminal. Subscribers get a queue each;
publishing never waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from worker.api import EVENT_END, EVENT_ROW, EVENT_STATUS, Progress
from worker.runs import status
from worker.runs.records import RunRecord, TrialRecord

KEEPALIVE = "keepalive"

Event = tuple[str, dict[str, Any]]


def row_event(
    run: RunRecord, trial: TrialRecord, progress: Progress | None = None
) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "trial_key": trial.key,
        "row": trial.row,
        "reason": trial.current.reason if trial.current is not None else None,
        "progress": (progress or status.progress(run)).model_dump(),
    }


class RunEvents:
    """The subscribers of every run, by run id."""

    def __init__(self) -> None:
        self._subscribers: dict[str, set[asyncio.Queue[Event]]] = {}
        # Trials whose row is set but still being saved: its event comes once the save is done,
        # so a subscriber arriving meanwhile must not replay it too (it would get it twice).
        self._held: set[tuple[str, str]] = set()

    def hold(self, run_id: str, trial_key: str) -> None:
        """Keep the trial's row out of replays until :meth:`publish_row` sends it."""
        self._held.add((run_id, trial_key))

    def publish_row(self, run: RunRecord, trial: TrialRecord) -> None:
        self._held.discard((run.run_id, trial.key))
        if self.listening(run.run_id):  # no event to build when nobody listens
            self.publish(run.run_id, (EVENT_ROW, row_event(run, trial)))

    def listening(self, run_id: str) -> bool:
        """Whether anyone listens to the run (so an event need not be built otherwise)."""
        return bool(self._subscribers.get(run_id))

    def publish(self, run_id: str, event: Event) -> None:
        for queue in self._subscribers.get(run_id, ()):
            queue.put_nowait(event)

    async def stream(
        self, run: RunRecord, *, keepalive_sec: float | None = None
    ) -> AsyncGenerator[Event, None]:
        """Status first, a ``row`` per finished trial (past ones replayed), ``end`` when terminal.

        With ``keepalive_sec``, a ``(KEEPALIVE, {})`` event is yielded after that long idle.
        """
        run_id = run.run_id
        queue: asyncio.Queue[Event] = asyncio.Queue()
        # Snapshot and subscribe with no await in between: nothing is missed or sent twice.
        yield_first: list[Event] = [(EVENT_STATUS, status.status_doc(run, with_rows=False))]
        progress = status.progress(run)  # once for the replay: O(trials), not O(trials^2)
        for trial in run.trials.values():
            if trial.row is not None and (run_id, trial.key) not in self._held:
                yield_first.append((EVENT_ROW, row_event(run, trial, progress)))
        if run.terminal:
            yield_first.append((EVENT_END, status.status_doc(run)))
        else:
            self._subscribers.setdefault(run_id, set()).add(queue)
        try:
            for event in yield_first:
                yield event
            if run.terminal:
                return
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), keepalive_sec)
                except TimeoutError:
                    yield (KEEPALIVE, {})
                    continue
                yield event
                if event[0] == EVENT_END:
                    return
        finally:
            self._subscribers.get(run_id, set()).discard(queue)
