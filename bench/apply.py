"""What the user waits for in a warm window: opening a model file, and Apply -> both panes updated.

Open: with the worker already warm, the time from opening a Python model file to the
TorchScript pane painted and to the ONNX pane painted, beside the model's bare trace time and
one diagnosing export (the worker's own timing of load + export + check).

The window (offscreen, warm worker) opens an example; the bench then applies a fix as the
Template dock's Apply does and measures until the re-export's ONNX graph is painted. The
reference is one plain `torch.onnx.export` of the same model at the same opset in a warm
process with one thread (ONNX_FALLTHROUGH, so the plain export gets through the unsupported
nodes as the diagnosing one does), taken right after each Apply so both see the same load;
the ratio is the median of the per-pair ratios.

Fix all: on the Swin example at opset 10 (14 problems, fixed by raising the opset), the time
from Fix all to the fixed analysis on screen, beside one bare export, with the whole-model exports
the search ran itself and the analyze jobs the window started meanwhile (target: 1 and 0; the
window reuses the analysis it holds and the one the search returns).

Usage: python bench/apply.py [--runs 5] [--fix-all-only]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["FIXPORT_DATA_DIR"] = tempfile.mkdtemp(prefix="fixport-bench-apply-")

REPO = Path(__file__).resolve().parent.parent
# (example, fixes applied before timing, the fix whose Apply is timed, label). "last fix": the
# Apply leaves nothing unsupported, so the re-export also runs the ORT check and compares with torch.
SDPA_FIX = ("aten::scaled_dot_product_attention", "decompose.scaled_dot_product_attention")
UNFLATTEN_FIX = ("aten::unflatten", "decompose.unflatten_reshape")
CASES = (("vit_tiny", (), UNFLATTEN_FIX, "vit_tiny, first fix"),
         ("vit_tiny", (SDPA_FIX,), UNFLATTEN_FIX, "vit_tiny, last fix"),
         ("threshold", (), ("aten::threshold", "decompose.threshold_where"), "threshold toy"))
FIX_ALL_CASES = ("swin_tiny",)  # opset 10: the search raises it to 11
WAIT_LIMIT_S = 300.0
SETTLE_S = 0.2

_BARE_EXPORT = """
import io, statistics, sys, time, importlib.util, torch
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location("model", sys.argv[1]); module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model, inputs = module.build()
opset = module.FIXPORT_EXAMPLE["opset"]
def once():
    started = time.perf_counter()
    torch.onnx.export(model, inputs, io.BytesIO(), opset_version=opset, dynamo=False,
                      operator_export_type=torch.onnx.OperatorExportTypes.ONNX_FALLTHROUGH)
    return time.perf_counter() - started
once()
print(statistics.median(once() for _ in range(int(sys.argv[2]))))
"""


_BARE_TRACE = """
import statistics, sys, time, importlib.util, torch
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location("model", sys.argv[1]); module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model, inputs = module.build()
def once():
    started = time.perf_counter()
    torch.jit.trace(model, inputs, check_trace=False)
    return time.perf_counter() - started
once()
print(statistics.median(once() for _ in range(int(sys.argv[2]))))
"""
OPEN_CASES = ("resnet18_clean", "vit_tiny")


def bare_trace_s(example: Path, runs: int) -> float:
    result = subprocess.run([sys.executable, "-c", _BARE_TRACE, str(example), str(runs)], capture_output=True,
                            text=True, check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    return float(result.stdout.split()[-1])


def open_to_panes_s(app, window, path: Path) -> tuple[float, float, float]:
    """Seconds from open_path to the source and the ONNX pane painted, and the worker's analysis time."""
    painted: dict[str, float] = {}
    views = {kind: window.graphs.pane(kind).view for kind in ("source", "onnx")}
    original = {kind: view.drawForeground for kind, view in views.items()}

    def stamp(kind: str):
        def draw(painter, rect) -> None:
            original[kind](painter, rect)
            item = views[kind].graph_item
            if item is not None and item.graph.nodes:  # the panes were cleared: only the new graph has nodes
                painted.setdefault(kind, time.perf_counter())
        return draw

    window.graphs.set_graphs(None, None, keep_view=False)
    app.processEvents()
    for kind, view in views.items():
        view.drawForeground = stamp(kind)
    started = time.perf_counter()
    window.open_path(path)
    wait_until(app, lambda: len(painted) == 2 and window.workbench.analysis is not None)
    for kind, view in views.items():
        view.drawForeground = original[kind]
    seconds = window.workbench.analysis.seconds
    return painted["source"] - started, painted["onnx"] - started, sum(seconds.values())


def wait_until(app, condition) -> None:
    """Run the event loop as the app does (sleeping until an event comes, not polling, which would
    take CPU from the worker) until ``condition`` holds."""
    from PySide6.QtCore import QEventLoop, QTimer

    deadline = time.monotonic() + WAIT_LIMIT_S
    tick = QTimer()  # wakes the loop now and then, so a condition no event announces is seen too
    tick.start(20)
    try:
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError("the window did not finish in time")
            app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    finally:
        tick.stop()


def mapping_for(window, kind: str, template_id: str):
    """The mapping the Template dock's Apply makes for ``template_id`` with its default parameters."""
    from fixport.core.project.project import FixMapping

    template = window.library.get(template_id)
    return FixMapping(target_kind=kind, template_id=template.id, source=template.source,
                      params=template.default_params())


def apply_to_panes_s(app, window, kind: str, template_id: str) -> tuple[float, float]:
    """Seconds from Apply to the re-export's ONNX graph painted (the TorchScript pane keeps its
    drawing when the trace is unchanged, and repaints its marks in the same frame), and to the
    whole analysis back (ONNX Runtime's check and the comparison with torch included)."""
    mapping = mapping_for(window, kind, template_id)
    view = window.graphs.pane("onnx").view
    original = view.drawForeground
    painted: list[float] = []
    shown = view.graph_item

    def stamp(painter, rect) -> None:
        original(painter, rect)
        if view.graph_item is not shown:
            painted.append(time.perf_counter())

    previous = window.workbench.analysis
    view.drawForeground = stamp
    started = time.perf_counter()
    window.apply_mapping(mapping)
    wait_until(app, lambda: bool(painted))
    wait_until(app, lambda: window.workbench.analysis is not previous)
    checked = time.perf_counter()
    view.drawForeground = original
    elapsed = painted[0] - started, checked - started
    window.workbench.remove_mapping(mapping.target_kind, mapping.python_op_name, mapping.instance)
    window.reexport(keep_view=True)
    wait_until(app, lambda: not window.runner.busy)
    settle(app)
    return elapsed


def fix_all_s(app, window) -> tuple[float, int, int]:
    """Seconds from Fix all to the fixed analysis on screen, the whole-model exports the search
    ran, and the analyze jobs the window started meanwhile."""
    jobs: list[str] = []
    searches: list = []

    def on_started(job) -> None:
        jobs.append(job.job.name)

    def on_finished(job, result) -> None:
        if job.job.name == "auto_fix":
            searches.append(result)

    window.runner.started.connect(on_started)
    window.runner.finished.connect(on_finished)
    previous = window.workbench.analysis
    started = time.perf_counter()
    window.start_fix_all()
    wait_until(app, lambda: window.workbench.analysis is not previous)
    elapsed = time.perf_counter() - started
    wait_until(app, lambda: not window.runner.busy)
    window.runner.started.disconnect(on_started)
    window.runner.finished.disconnect(on_finished)
    return elapsed, searches[0].whole_model_exports, jobs.count("analyze")


def settle(app, seconds: float = SETTLE_S) -> None:
    """Let the window finish what follows an analysis (the docks refresh after the paint), as it
    has by the time a user clicks again."""
    until = time.monotonic() + seconds
    wait_until(app, lambda: time.monotonic() > until)


class BareExporter:
    """A warm process that does one plain export per request, so each Apply is timed beside a
    bare export taken under the same machine load."""

    def __init__(self, example: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-W", "ignore", "-c", _BARE_EXPORT_SERVER, str(example)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True,
                                        env=dict(os.environ, OMP_NUM_THREADS="1"))
        self.export_s()  # warm-up

    def export_s(self) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("export\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


_BARE_EXPORT_SERVER = _BARE_EXPORT.replace(
    "once()\nprint(statistics.median(once() for _ in range(int(sys.argv[2]))))",
    "for line in sys.stdin:\n    print(once(), flush=True)")


def open_and_apply(app, window, runs: int) -> None:
    """Opening a model file, then Apply -> panes updated, each beside a bare export."""
    from fixport.examples.catalog import example_path

    print(f"{'open (warm worker)':<20} {'trace s':>8} {'diagnosing export s':>20} {'TS drawn s':>11} "
          f"{'ONNX drawn s':>13}")
    for name in OPEN_CASES:
        timings = [open_to_panes_s(app, window, example_path(name)) for _ in range(runs)]
        trace = bare_trace_s(example_path(name), runs)
        ts, onnx_s, analysis = (statistics.median(column) for column in zip(*timings))
        print(f"{name:<20} {trace:>8.3f} {analysis:>20.3f} {ts:>11.3f} {onnx_s:>13.3f}", flush=True)
    print()
    print(f"{'case':<20} {'fix':<30} {'bare export s':>13} {'Apply -> panes s':>17} {'ratio':>7} "
          f"{'Apply -> checked s':>19} {'ratio':>7}")
    for name, before, (kind, template_id), label in CASES:
        window.open_path(example_path(name))
        wait_until(app, lambda: window.workbench.analysis is not None and not window.runner.busy)
        for earlier_kind, earlier_id in before:
            window.workbench.apply_mapping(mapping_for(window, earlier_kind, earlier_id))
        window.reexport(keep_view=True)
        wait_until(app, lambda: not window.runner.busy)
        settle(app)
        bare_exporter = BareExporter(example_path(name))
        pairs = []
        for _ in range(runs):  # each Apply beside a bare export taken just after it
            applied = apply_to_panes_s(app, window, kind, template_id)
            pairs.append((*applied, bare_exporter.export_s()))
        bare_exporter.close()
        applied, checked, bare = (statistics.median(column) for column in zip(*pairs))
        ratio = statistics.median(a / b for a, _, b in pairs)
        checked_ratio = statistics.median(c / b for _, c, b in pairs)
        print(f"{label:<20} {template_id:<30} {bare:>13.3f} {applied:>17.3f} {ratio:>6.2f}x "
              f"{checked:>19.3f} {checked_ratio:>6.2f}x", flush=True)


def fix_all(app, window, runs: int) -> None:
    """Fix all -> the fixed analysis on screen, beside a bare export of the same model."""
    from fixport.examples.catalog import example_path

    print(f"{'Fix all':<20} {'bare export s':>13} {'Fix all -> panes s':>19} {'ratio':>7} "
          f"{'model exports':>14} {'window re-exports':>18}")
    for name in FIX_ALL_CASES:
        bare_exporter = BareExporter(example_path(name))
        rows = []
        for _ in range(runs):
            window.open_path(example_path(name))
            wait_until(app, lambda: window.workbench.analysis is not None and not window.runner.busy)
            settle(app)
            rows.append((*fix_all_s(app, window), bare_exporter.export_s()))
        bare_exporter.close()
        seconds, bare = statistics.median(r[0] for r in rows), statistics.median(r[3] for r in rows)
        ratio = statistics.median(r[0] / r[3] for r in rows)
        print(f"{name:<20} {bare:>13.3f} {seconds:>19.3f} {ratio:>6.1f}x {max(r[1] for r in rows):>14} "
              f"{max(r[2] for r in rows):>18}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fix-all-only", action="store_true", help="only the Fix all measurement")
    args = parser.parse_args()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from fixport.gui.main_window import MainWindow

    app = QApplication(sys.argv[:1])
    window = MainWindow(settings=QSettings(str(Path(os.environ["FIXPORT_DATA_DIR"]) / "s.ini"),
                                           QSettings.Format.IniFormat))
    window.resize(1400, 900)
    window.show()
    wait_until(app, lambda: not window.runner.busy)  # the worker is warm
    if not args.fix_all_only:
        open_and_apply(app, window, args.runs)
        print()
    fix_all(app, window, args.runs)
    window.close()


if __name__ == "__main__":
    main()
