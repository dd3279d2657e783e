"""The worker process: imports torch once, then runs the jobs of :data:`.jobs.JOBS` sent by
:class:`.client.ExportWorker`, and exits as soon as the process that started it is gone."""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from fixport.core.foundation.errors import FixportError
from fixport.core.records.requests import PingRequest
from fixport.core.records.results import WorkerInfo
from fixport.core.words.cancel import CancelCallback, Cancelled, ProgressCallback
from fixport.core.words.errors import trimmed_message
from fixport.core.worker.client import JobFailure
from fixport.core.worker.jobs import JOBS, job_for

PARENT_WATCH_INTERVAL_S = 0.2
EXIT_PARENT_GONE = 3


def ping(request: PingRequest, progress: ProgressCallback | None = None,
         cancelled: CancelCallback | None = None) -> WorkerInfo:
    """Report versions; the worker warmed its exporters up when it started (``worker_main``)."""
    import onnx
    import onnxruntime
    import torch

    return WorkerInfo(pid=os.getpid(), torch=torch.__version__, onnx=onnx.__version__,
                      onnxruntime=onnxruntime.__version__, threads=torch.get_num_threads(),
                      providers=list(onnxruntime.get_available_providers()))


def exit_with_parent(parent_pid: int, interval_s: float = PARENT_WATCH_INTERVAL_S) -> threading.Thread:
    """A daemon thread that ends this process (also mid-job) once ``parent_pid`` is no longer its parent.

    Not prctl(PR_SET_PDEATHSIG): that fires when the *thread* that started the worker exits,
    and the window starts it from a short-lived job thread.
    """
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        os._exit(EXIT_PARENT_GONE)  # no cleanup: torch may hold locks the main thread never releases

    watcher = threading.Thread(target=watch, name="fixport-parent-watch", daemon=True)
    watcher.start()
    return watcher


class CancelPoll:
    """The job's ``cancelled()``: a non-blocking look at the connection for the client's cancel."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.requested = False

    def __call__(self) -> bool:
        try:
            while not self.requested and self.connection.poll(0):
                kind, _payload = self.connection.recv()
                self.requested = kind == "cancel"
        except (EOFError, OSError):
            self.requested = True  # the caller went away: nobody wants the result
        return self.requested


def worker_main(connection: Connection, parent_pid: int | None = None) -> None:
    """Worker process entry: one thread for torch, output away from the caller's stdout."""
    if parent_pid is not None:
        exit_with_parent(parent_pid)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.dup2(2, 1)  # user code that prints must not corrupt `--json` output on stdout
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.jit/onnx deprecation notices
    import torch

    torch.set_num_threads(1)
    from fixport.core.exporters.choice import process_states
    from fixport.core.loaders.model_cache import watch_process_state

    functions = {job.request_type: job.resolve() for job in JOBS}
    # torchvision registers its ONNX symbolics (nms, roi_align, ...) when first imported: before the
    # snapshot, or the restore after the first job importing it would drop them for good
    import torchvision  # noqa: F401
    states = process_states()
    snapshots = [state.snapshot() for state in states]
    watch_process_state(lambda: tuple(state.fingerprint() for state in states))
    while True:
        try:
            kind, request = connection.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if kind != "job":
            continue  # a cancel that arrived after its job had finished
        try:
            _run_job(connection, functions, request)
        except (BrokenPipeError, ConnectionResetError):
            return  # the caller went away (window closed, job killed): nothing to report to
        finally:
            for state, snapshot in zip(states, snapshots):
                state.restore(snapshot)


class ProgressToCaller:
    """The job's ``progress``: fractions and messages, and early pieces of the result."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.sending = threading.Lock()  # a heartbeat thread reports too: one message at a time on the pipe

    def __call__(self, fraction: float, message: str = "") -> None:
        with self.sending:
            self.connection.send(("progress", (fraction, message)))

    def partial(self, piece: Any) -> None:
        with self.sending:
            self.connection.send(("partial", piece))


def _run_job(connection: Connection, functions: dict[type, Any], request: object) -> None:
    try:
        function = functions[job_for(request).request_type]
        result = function(request, progress=ProgressToCaller(connection), cancelled=CancelPoll(connection))
    except (BrokenPipeError, ConnectionResetError):
        raise
    except Cancelled:
        connection.send(("cancelled", None))
    except FixportError as exc:
        exc.details = exc.details or traceback.format_exc()  # a crash in the exporter leaves a log to read
        connection.send(("error", JobFailure.from_exception(exc)))
    except BaseException as exc:  # anything from user code: report it, keep serving
        connection.send(("error", JobFailure("FixportError", f"{type(exc).__name__}: {trimmed_message(str(exc))}",
                                           "See the Log for details.", traceback.format_exc())))
    else:
        connection.send(("result", result))


if __name__ == "__main__":
    # Run the importable module's copy, so classes sent back pickle as fixport.core.worker.server.X, not __main__.X.
    from fixport.core.worker.server import worker_main as serve

    serve(Connection(int(sys.argv[1])), int(sys.argv[2]) if len(sys.argv) > 2 else None)
