"""The worker process: imports torch once, then runs jobs sent by :class:`.client.ExportWorker`."""
from __future__ import annotations

import os
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

from fixport.core.model.cancel import ProgressCallback
from fixport.core.model.errors import FixportError
from fixport.core.worker.client import JOB_MODULES, _Failure


def ping(progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Warm the worker up: import torch and the exporter, report versions."""
    import onnx
    import onnxruntime
    import torch

    from fixport.core.exporters.registry import load_all_builtin_symbolics

    load_all_builtin_symbolics()
    return {"pid": __import__("os").getpid(), "torch": torch.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "threads": torch.get_num_threads()}


def worker_main(connection: Connection) -> None:
    """Worker process entry: one thread for torch, output away from the caller's stdout."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.dup2(2, 1)  # user code that prints must not corrupt `--json` output on stdout
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.jit/onnx deprecation notices
    import torch

    torch.set_num_threads(1)
    import importlib

    from fixport.core.exporters.registry import restore_registry, snapshot_registry

    job_functions = {}
    for module_name in JOB_MODULES:
        module = importlib.import_module(module_name)
        job_functions.update({name: value for name, value in vars(module).items()
                              if callable(value) and getattr(value, "__module__", "") == module_name
                              and not name.startswith("_")})

    registry = snapshot_registry()
    while True:
        try:
            job, arguments = connection.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        try:
            def send_progress(fraction: float, message: str = "") -> None:
                connection.send(("progress", (fraction, message)))

            if job not in job_functions:
                raise FixportError(f"Unknown worker job {job!r}.", "This is a Fixport bug.")
            result = job_functions[job](progress=send_progress, **arguments)
            connection.send(("result", result))
        except (BrokenPipeError, ConnectionResetError):
            return  # the caller went away (window closed, job cancelled): nothing to report to
        except FixportError as exc:
            connection.send(("error", _Failure.from_exception(exc)))
        except BaseException as exc:  # anything from user code: report it, keep serving
            connection.send(("error", _Failure("FixportError", f"{type(exc).__name__}: {exc}",
                                               "See the Log for details.", traceback.format_exc())))
        finally:
            restore_registry(registry)


if __name__ == "__main__":
    # Run the importable module's copy, so classes sent back pickle as fixport.core.worker.server.X, not __main__.X.
    from fixport.core.worker.server import worker_main as serve

    serve(Connection(int(sys.argv[1])))
