"""Models of a sweep in parallel on this machine: N threads, each driving its own export worker process.

Each worker process is a plain :class:`ExportWorker` (it exits with this process, see
``fixport.core.worker.server``); the threads only wait on them, so N threads give N processes'
worth of exports. Setting ``stop`` cancels every running job and stops every worker.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fixport.core.sweep.model_sweep import sweep_model
from fixport.core.sweep.rows import SweepRow, SweepSettings
from fixport.core.words.cancel import Cancelled
from fixport.core.worker.client import ExportWorker

JOIN_POLL_S = 0.2  # how often the waiting thread wakes, so Ctrl+C reaches it at once


@dataclass(frozen=True)
class ModelTask:
    """One model of the sweep and the exporters it still needs (the others came from the cache)."""

    number: int  # 1-based, of the sweep's models
    model: Path
    exporters: tuple[str, ...]


RowCallback = Callable[[SweepRow], None]
StepCallback = Callable[[ModelTask, str, str], None]  # (task, exporter, step)


def run_local(tasks: list[ModelTask], settings: SweepSettings, jobs: int, on_row: RowCallback,
              on_step: StepCallback, stop: threading.Event) -> None:
    """Every task's rows, ``jobs`` models at a time; returns when all are done or ``stop`` was set and
    the workers are stopped. ``on_row`` and ``on_step`` are called from the worker threads."""
    pending: queue.Queue[ModelTask] = queue.Queue()
    for task in tasks:
        pending.put(task)
    threads = [threading.Thread(target=_drain, args=(pending, settings, on_row, on_step, stop),
                                name=f"fixport-sweep-{index}", daemon=True)
               for index in range(max(1, min(jobs, len(tasks))))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(JOIN_POLL_S)
    finally:
        stop_and_wait(threads, stop)


def stop_and_wait(threads: list[threading.Thread], stop: threading.Event) -> None:
    """On the way out (done, or Ctrl+C): every thread told to stop, and waited for (each stops its worker)."""
    if any(thread.is_alive() for thread in threads):
        stop.set()
    for thread in threads:
        thread.join()


def _drain(pending: queue.Queue[ModelTask], settings: SweepSettings, on_row: RowCallback, on_step: StepCallback,
           stop: threading.Event) -> None:
    worker = ExportWorker(job_timeout_s=settings.timeout_s)
    try:
        while not stop.is_set():
            try:
                task = pending.get_nowait()
            except queue.Empty:
                return
            for exporter in task.exporters:
                if stop.is_set():
                    return
                try:
                    row = sweep_model(worker, task.model, exporter, settings,
                                      on_step=lambda step, t=task, e=exporter: on_step(t, e, step),
                                      cancelled=stop.is_set)
                except Cancelled:
                    return
                except Exception as exc:  # a Fixport bug: this row says so, and the sweep goes on
                    row = SweepRow(str(task.model), exporter, retry=True,
                                   message=f"unexpected {type(exc).__name__}: {exc} (a Fixport bug; please report it)")
                on_row(row)
    finally:
        worker.stop()
