"""The export worker survives crashes, hangs and cancels, and restores the symbolic registry."""
from __future__ import annotations

import threading
import time

import pytest

from fixport.core.model.cancel import Cancelled
from fixport.core.model.errors import ModelLoadError, WorkerError
from fixport.core.model.results import ModelRequest
from fixport.core.worker.client import ExportWorker

ASINH_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.asinh(x)

    def build():
        return Model(), (torch.rand(2, 3),)
"""

REGISTERING_MODEL = ASINH_MODEL + """
    torch.onnx.register_custom_op_symbolic("aten::asinh", lambda g, x: g.op("Asinh", x), 9)
"""


def test_warm_worker_answers_and_uses_one_thread(worker: ExportWorker) -> None:
    info = worker.run("ping")
    assert info["threads"] == 1
    started = time.perf_counter()
    worker.run("ping")
    assert info["pid"] == worker.pid
    assert time.perf_counter() - started < 5  # generous: a warm round trip, not a cold start


def test_registry_is_restored_after_each_job(worker: ExportWorker, model_file) -> None:
    registering = model_file("registers.py", REGISTERING_MODEL)
    plain = model_file("plain.py", ASINH_MODEL)
    fixed = worker.run("analyze", request=ModelRequest(str(registering)), options={"opset": 12})
    assert fixed.unsupported == []
    again = worker.run("analyze", request=ModelRequest(str(plain)), options={"opset": 12})
    assert [p.kind for p in again.unsupported] == ["aten::asinh"]


def test_crash_in_user_code_is_reported_and_worker_restarts(model_file) -> None:
    crashing = model_file("crash.py", """
        import os
        def build():
            os._exit(7)
    """)
    worker = ExportWorker(job_timeout_s=120)
    try:
        with pytest.raises(WorkerError, match="crashed.*exit code 7"):
            worker.run("analyze", request=ModelRequest(str(crashing)))
        assert worker.run("ping")["threads"] == 1
        assert worker.restarts == 1
    finally:
        worker.stop()


def test_hang_is_stopped_by_the_timeout(model_file) -> None:
    hanging = model_file("hang.py", """
        import time
        def build():
            time.sleep(600)
    """)
    worker = ExportWorker(job_timeout_s=120)
    try:
        worker.run("ping")
        with pytest.raises(WorkerError, match="did not finish"):
            worker.run("analyze", request=ModelRequest(str(hanging)), timeout_s=2)
        assert not worker.alive
    finally:
        worker.stop()


def test_cancel_stops_a_running_job(model_file) -> None:
    hanging = model_file("slow.py", """
        import time
        def build():
            time.sleep(600)
    """)
    worker = ExportWorker(job_timeout_s=120)
    cancel = threading.Event()
    try:
        worker.run("ping")
        threading.Timer(0.5, cancel.set).start()
        with pytest.raises(Cancelled):
            worker.run("analyze", request=ModelRequest(str(hanging)), cancelled=cancel.is_set)
        assert not worker.alive
    finally:
        worker.stop()


def test_errors_cross_the_process_boundary_with_their_hint(worker: ExportWorker, model_file) -> None:
    broken = model_file("broken.py", """
        def build():
            return 1 / 0
    """)
    with pytest.raises(ModelLoadError) as info:
        worker.run("analyze", request=ModelRequest(str(broken)))
    assert "ZeroDivisionError" in info.value.message
    assert "broken.py line 3" in info.value.message
    assert info.value.hint
