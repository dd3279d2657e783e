"""The same sweep's models as tasks on a Ray cluster (``sweep --ray ADDRESS``): the same rows and cache.

Each task runs one model with every exporter still needed, in its own export worker inside the Ray
worker process, and returns plain JSON rows; this process stores them in the cache as they arrive.
The cluster's nodes need Fixport installed and the model paths readable (a shared file system).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from fixport.core.foundation.errors import FixportError
from fixport.core.sweep.local_runner import ModelTask, RowCallback, StepCallback
from fixport.core.sweep.rows import SweepRow, SweepSettings

LOCAL_ADDRESS = "local"  # ray.init(address="local"): a new Ray instance on this machine
WAIT_POLL_S = 0.5
TASK_CPUS = 1


def sweep_model_task(model: str, exporters: tuple[str, ...], settings: SweepSettings) -> list[dict[str, Any]]:
    """Runs on a Ray worker: one model with each exporter, in an export worker that dies with this process."""
    from fixport.core.sweep.model_sweep import sweep_model
    from fixport.core.worker.client import ExportWorker

    worker = ExportWorker(job_timeout_s=settings.timeout_s)
    try:
        return [sweep_model(worker, Path(model), exporter, settings).to_json() for exporter in exporters]
    finally:
        worker.stop()


def _rows_of(ray: Any, reference: Any, task: ModelTask) -> list[SweepRow]:
    """The task's rows; where Ray lost the task (its node died, Fixport is missing there) an error row
    per exporter, saying so."""
    try:
        return [SweepRow.from_json(data) for data in ray.get(reference)]
    except ray.exceptions.RayError as exc:
        message = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        return [SweepRow(model=str(task.model), exporter=exporter, message=f"Ray task failed: {message}", retry=True)
                for exporter in task.exporters]


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise FixportError("--ray needs Ray, which is not installed.",
                           'Install it with: pip install -e ".[ray]"  (or run without --ray, with --jobs N)') from exc
    return ray


def run_on_ray(tasks: list[ModelTask], settings: SweepSettings, address: str, on_row: RowCallback,
               on_step: StepCallback, stop: threading.Event) -> None:
    """Every task on the Ray cluster at ``address`` ("local" starts one here); returns when all are
    done, or cancels the tasks still running once ``stop`` is set or Ctrl+C arrives."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise FixportError(f"Cannot reach a Ray cluster at {address}: {exc}",
                               "Give the address `ray start --head` printed (e.g. --ray 10.0.0.5:6379), "
                               "or --ray local for one on this machine.") from exc
    remote = ray.remote(num_cpus=TASK_CPUS, max_retries=0)(sweep_model_task)
    running = {}
    for task in tasks:
        on_step(task, ",".join(task.exporters), "submitted to Ray")
        running[remote.remote(str(task.model), task.exporters, settings)] = task
    try:
        while running and not stop.is_set():
            done, _ = ray.wait(list(running), num_returns=1, timeout=WAIT_POLL_S)
            for reference in done:
                task = running.pop(reference)
                for row in _rows_of(ray, reference, task):
                    on_row(row)
    finally:
        for reference in running:
            ray.cancel(reference, force=True)
        if started_here:
            ray.shutdown()
