"""The export worker: every job in the table runs, cancel really stops jobs (the warm worker
survives when the job cooperates), crashes and hangs restart it, it dies with its parent, and
the GUI runner hands each result to the handler registered for its job."""
from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from fixport.core.foundation.errors import ModelLoadError
from fixport.core.records.requests import (
    AnalyzeRequest,
    AutoFixRequest,
    BaselineRequest,
    CompareExportersRequest,
    CompareRequest,
    FixOffersRequest,
    OpInfoRequest,
    PingRequest,
    RunExporterRequest,
    StubRequest,
    SuggestDynamicRequest,
    SynthesizeRequest,
)
from fixport.core.records.results import ModelRequest, WorkerInfo
from fixport.core.records.runtime_pair import RuntimesCompareRequest
from fixport.core.words.cancel import Cancelled
from fixport.core.words.errors import WorkerError
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason
from fixport.core.worker.client import CANCEL_GRACE_S, ExportWorker
from fixport.core.worker.jobs import JOBS, job_for
from fixport.gui.latest import LatestRequests
from tests.conftest import REPO

THRESHOLD = str(REPO / "examples" / "threshold.py")

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

# Each forward call takes a while, so a compare over several input sets is still running when cancelled.
SLOW_FORWARD_MODEL = """
    import time
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            time.sleep(0.3)
            return x * 2

    def build():
        return Model(), (torch.rand(2, 3),)
"""

CLEAN_MODEL = """
    import torch

    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (torch.randn(2, 4),)
"""


def sample_request(request_type: type, clean_model: str) -> object:
    """A request of each type: the table's every job runs for real."""
    return {
        PingRequest: PingRequest(),
        AnalyzeRequest: AnalyzeRequest(ModelRequest(THRESHOLD)),
        CompareRequest: CompareRequest(ModelRequest(clean_model), runs=2),
        CompareExportersRequest: CompareExportersRequest(ModelRequest(clean_model), ["torchscript", "dynamo"],
                                                         analyze_nodes=False, latency_runs=1),
        AutoFixRequest: AutoFixRequest(ModelRequest(THRESHOLD)),
        BaselineRequest: BaselineRequest(ModelRequest(clean_model)),
        StubRequest: StubRequest("aten::threshold", 17, ["Tensor", "Scalar", "Scalar"]),
        OpInfoRequest: OpInfoRequest("aten::relu"),
        SynthesizeRequest: SynthesizeRequest("aten::cosh", 17),
        FixOffersRequest: FixOffersRequest(UnsupportedNode("aten::upsample_bicubic2d", "n1", ProblemReason.BAKED_INPUT,
                                                           "scale is baked", "", "m.py:3"), 17),
        SuggestDynamicRequest: SuggestDynamicRequest(ModelRequest(clean_model)),
        RunExporterRequest: RunExporterRequest(ModelRequest(clean_model), {"exporter": "torchscript"}),
        RuntimesCompareRequest: RuntimesCompareRequest(ModelRequest(clean_model), ["ort", "openvino"], runs=1),
    }[request_type]


@pytest.fixture(scope="module")
def clean_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("models") / "clean.py"
    path.write_text(textwrap.dedent(CLEAN_MODEL), encoding="utf-8")
    return str(path)


def test_job_names_and_request_types_are_unique() -> None:
    assert len({job.name for job in JOBS}) == len({job.request_type for job in JOBS}) == len(JOBS)


@pytest.mark.parametrize("job", JOBS, ids=lambda job: job.name)
def test_every_job_resolves_and_takes_request_progress_cancelled(job, clean_model: str) -> None:
    parameters = [p for p in inspect.signature(job.resolve()).parameters.values()
                  if p.kind is not inspect.Parameter.KEYWORD_ONLY]  # the worker passes these three
    assert [p.name for p in parameters] == ["request", "progress", "cancelled"]
    assert parameters[0].annotation in (job.request_type, job.request_type.__name__)
    assert parameters[1].default is None and parameters[2].default is None
    assert job_for(sample_request(job.request_type, clean_model)) is job


@pytest.mark.parametrize("job", JOBS, ids=lambda job: job.name)
def test_every_job_runs_in_the_worker_and_returns_its_result_type(worker: ExportWorker, job,
                                                                   clean_model: str) -> None:
    result = worker.run(sample_request(job.request_type, clean_model), cancelled=lambda: False)
    assert isinstance(result, job.result_type)


def test_something_that_is_not_a_request_is_refused_at_the_call_site(worker: ExportWorker) -> None:
    with pytest.raises(TypeError, match="not a worker request"):
        worker.run(ModelRequest(THRESHOLD))


def test_warm_worker_answers_and_uses_one_thread(worker: ExportWorker) -> None:
    info = worker.run(PingRequest())
    assert isinstance(info, WorkerInfo) and info.threads == 1
    started = time.perf_counter()
    worker.run(PingRequest())
    assert info.pid == worker.pid
    assert time.perf_counter() - started < 5  # generous: a warm round trip, not a cold start


def test_registry_is_restored_after_each_job(worker: ExportWorker, model_file) -> None:
    registering = model_file("registers.py", REGISTERING_MODEL)
    plain = model_file("plain.py", ASINH_MODEL)
    fixed = worker.run(AnalyzeRequest(ModelRequest(str(registering)), options={"opset": 12}))
    assert fixed.unsupported == []
    again = worker.run(AnalyzeRequest(ModelRequest(str(plain)), options={"opset": 12}))
    assert [p.kind for p in again.unsupported] == ["aten::asinh"]


@pytest.mark.slow
def test_crash_in_user_code_is_reported_and_worker_restarts(model_file) -> None:
    crashing = model_file("crash.py", """
        import os
        def build():
            os._exit(7)
    """)
    worker = ExportWorker(job_timeout_s=120)
    try:
        with pytest.raises(WorkerError, match="crashed.*exit code 7"):
            worker.run(AnalyzeRequest(ModelRequest(str(crashing))))
        assert worker.run(PingRequest()).threads == 1
        assert worker.restarts == 1
    finally:
        worker.stop()


@pytest.mark.slow
def test_hang_is_stopped_by_the_timeout(model_file) -> None:
    hanging = model_file("hang.py", """
        import time
        def build():
            time.sleep(600)
    """)
    worker = ExportWorker(job_timeout_s=120)
    try:
        worker.run(PingRequest())
        with pytest.raises(WorkerError, match="did not finish"):
            worker.run(AnalyzeRequest(ModelRequest(str(hanging))), timeout_s=2)
        assert not worker.alive
    finally:
        worker.stop()


@pytest.mark.slow
def test_a_job_that_keeps_reporting_progress_outlives_the_timeout(model_file) -> None:
    """The timeout is on stalls: each stage here (build, trace, torch's run for the check) takes
    1.2 s, 3.6 s in all, under a 3 s limit; a real-size model's stages add up the same way."""
    slow = model_file("slow_stages.py", """
        import time
        import torch

        class Slow(torch.nn.Module):
            def forward(self, x):
                time.sleep(1.2)
                return x * 2

        def build():
            time.sleep(1.2)
            return Slow(), (torch.randn(2, 3),)
    """)
    worker = ExportWorker(job_timeout_s=120)
    try:
        worker.run(PingRequest())
        started = time.monotonic()
        result = worker.run(AnalyzeRequest(ModelRequest(str(slow))), timeout_s=3)
        assert time.monotonic() - started > 3 and result.unsupported == []
    finally:
        worker.stop()


def test_cancelled_compare_stops_at_its_next_check_and_the_worker_stays_warm(worker: ExportWorker,
                                                                            model_file) -> None:
    slow = model_file("slow_forward.py", SLOW_FORWARD_MODEL)
    pid = worker.run(PingRequest()).pid
    cancel = threading.Event()
    messages: list[str] = []

    def progress(fraction: float, message: str) -> None:
        messages.append(message)
        if "input set 2/" in message:
            cancel.set()

    with pytest.raises(Cancelled):
        worker.run(CompareRequest(ModelRequest(str(slow)), runs=6), progress=progress, cancelled=cancel.is_set)
    assert cancel.is_set()
    assert not any("input set 6/" in message or "node by node" in message for message in messages)
    assert worker.alive and worker.pid == pid  # the job stopped by itself: nothing was killed
    assert worker.run(PingRequest()).pid == pid


@pytest.mark.slow
def test_a_job_that_never_checks_is_killed_after_the_grace(model_file) -> None:
    looping = model_file("loops.py", """
        def build():
            while True:
                pass
    """)
    worker = ExportWorker(job_timeout_s=120)
    try:
        first_pid = worker.run(PingRequest()).pid
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(Cancelled):
            worker.run(AnalyzeRequest(ModelRequest(str(looping))), cancelled=cancel.is_set)
        assert time.monotonic() - started < 0.5 + CANCEL_GRACE_S + 5
        assert not worker.alive and not _running(first_pid)
        assert worker.run(PingRequest()).pid not in (None, first_pid)
        assert worker.restarts == 1
    finally:
        worker.stop()


def test_errors_cross_the_process_boundary_with_their_hint(worker: ExportWorker, model_file) -> None:
    broken = model_file("broken.py", """
        def build():
            return 1 / 0
    """)
    with pytest.raises(ModelLoadError) as info:
        worker.run(AnalyzeRequest(ModelRequest(str(broken))))
    assert "ZeroDivisionError" in info.value.message
    assert "broken.py line 3" in info.value.message
    assert info.value.hint


# ---- the worker dies with its parent -------------------------------------------------------------

PARENT_SCRIPT = """
    import sys
    import threading

    from fixport.core.records.requests import AnalyzeRequest
    from fixport.core.records.results import ModelRequest
    from fixport.core.worker.client import ExportWorker

    worker = ExportWorker(job_timeout_s=600)
    # Started from a thread that ends at once, as the window's job threads do: the worker must
    # outlive that thread and still die with this process.
    starter = threading.Thread(target=worker.start)
    starter.start()
    starter.join()
    print(worker.pid, flush=True)
    worker.run(AnalyzeRequest(ModelRequest(sys.argv[1])))
"""

BUSY_MODEL = """
    import pathlib
    import time

    def build():
        pathlib.Path(__file__).with_name("job_started").write_text("yes")
        time.sleep(600)
"""


def _running(pid: int | None) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.parametrize("kill_signal", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "term"])
def test_worker_exits_within_a_second_when_its_parent_is_killed_mid_job(tmp_path: Path, model_file,
                                                                        kill_signal: int) -> None:
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(PARENT_SCRIPT), encoding="utf-8")
    busy = model_file("busy.py", BUSY_MODEL)
    parent = subprocess.Popen([sys.executable, str(script), str(busy)], cwd=REPO, stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    worker_pid = None
    try:
        worker_pid = int(parent.stdout.readline())
        deadline = time.monotonic() + 120
        while not (tmp_path / "job_started").exists():  # the worker is inside the job's build()
            assert time.monotonic() < deadline and parent.poll() is None, "the job never started"
            time.sleep(0.1)
        parent.send_signal(kill_signal)
        parent.wait(10)
        gone_by = time.monotonic() + 2.0
        while _running(worker_pid) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert not _running(worker_pid), "the worker outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
        if worker_pid is not None and _running(worker_pid):
            os.kill(worker_pid, signal.SIGKILL)  # never leave an orphan behind, even when the test fails


# ---- latest wins, and the GUI runner --------------------------------------------------------------

def test_only_the_newest_request_of_a_topic_counts() -> None:
    latest = LatestRequests()
    first = latest.issue("analyze")
    cancelled = latest.cancel_callback(first, "analyze")
    other = latest.issue("compare")
    assert latest.is_current(first, "analyze") and not cancelled()
    second = latest.issue("analyze")
    assert cancelled() and not latest.is_current(first, "analyze") and latest.is_current(second, "analyze")
    assert latest.is_current(other, "compare")  # topics are independent
    latest.supersede("compare")
    assert not latest.is_current(other, "compare")


def test_runner_hands_results_to_the_handler_registered_for_their_job(qtbot, worker: ExportWorker) -> None:
    from fixport.gui.job_runner import JobRunner

    runner = JobRunner(worker=worker)
    ready: list[WorkerInfo] = []
    infos: list = []
    runner.on_finished(PingRequest, ready.append)
    runner.on_finished(OpInfoRequest, infos.append)
    with pytest.raises(TypeError):
        runner.on_finished(ModelRequest, print)
    runner.submit(PingRequest())
    runner.submit(OpInfoRequest("aten::relu"))
    runner.submit(OpInfoRequest("aten::threshold"))  # supersedes the pending relu request
    qtbot.waitUntil(lambda: bool(infos) and not runner.busy, timeout=60_000)
    assert [info.pid for info in ready] == [worker.pid]
    assert [info.kind for info in infos] == ["aten::threshold"]


def test_a_shut_down_runner_signals_nothing_when_its_last_job_ends(qtbot, worker: ExportWorker) -> None:
    """A window closed while a job runs: the job's end must not reach the window's deleted widgets."""
    from fixport.gui.job_runner import JobRunner

    runner = JobRunner(worker=worker)
    heard: list[str] = []
    for name in ("started", "progress", "partial", "finished", "failed", "busy_changed"):
        getattr(runner, name).connect(lambda *args, name=name: heard.append(name))
    runner.submit(OpInfoRequest("aten::relu"))
    heard.clear()
    runner.shutdown()
    runner.submit(PingRequest())  # a deferred request after the close starts nothing
    qtbot.waitUntil(lambda: not runner.busy, timeout=60_000)
    qtbot.wait(50)
    assert heard == []


def test_cancel_reports_the_jobs_it_drops(qtbot, worker: ExportWorker) -> None:
    """Cancel while an export waits behind the warm-up: the export is what the user stopped."""
    from fixport.gui.job_runner import JobRunner

    runner = JobRunner(worker=worker)
    cancelled: list[str] = []
    runner.cancelled.connect(lambda submitted: cancelled.append(submitted.job.name))
    runner.submit(PingRequest())
    runner.submit(AnalyzeRequest(ModelRequest(THRESHOLD)))  # pending behind the ping
    runner.cancel()
    assert "analyze" in cancelled
    qtbot.waitUntil(lambda: not runner.busy, timeout=60_000)


def test_a_failure_crosses_the_pipe_as_its_own_class_foundation_or_engine() -> None:
    """The window asks for a missing input on MissingInputsError (the foundation's); a trace error is
    the engine's: each comes back from the worker as its class, not as a plain FixportError."""
    from fixport.core.foundation.errors import MissingInputsError
    from fixport.core.words.errors import TraceError
    from fixport.core.worker.client import JobFailure

    for raised in (MissingInputsError("No example inputs for pixel_values.", "Pass --input."),
                   TraceError("The trace failed.", "Look at forward().")):
        back = JobFailure.from_exception(raised).to_exception()
        assert type(back) is type(raised) and back.hint == raised.hint
