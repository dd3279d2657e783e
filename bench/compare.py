"""Cost of `compare` on a ResNet-50-sized model (torchvision resnet50, random weights, 1x3x224x224).

Prints medians of five repeats, side by side:
* bare torch run, bare ONNX Runtime run;
* one comparison run (torch + ORT + statistics and plot data) and its ratio to torch + ORT;
* per-node capture: torch (all TorchScript values) and ONNX (every node output), each as a
  ratio to its bare run, and the whole node analysis.

Run: python bench/compare.py
"""
from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fixport.core.comparison.compare_job import compare_run  # noqa: E402
from fixport.core.comparison.intermediates import analyze_nodes, with_all_node_outputs  # noqa: E402
from fixport.core.exporters.torchscript.exporter import TorchScriptExporter  # noqa: E402
from fixport.core.foundation.session_feeds import feeds_for  # noqa: E402
from fixport.core.loaders.loading import LoadedModel  # noqa: E402
from fixport.core.onnx_io.ort_session import create_session
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.tolerances import ToleranceTable  # noqa: E402

REPEATS = 5


def median_seconds(work: Callable[[], object]) -> float:
    work()  # warm-up: first runs allocate and pick kernels
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    module = torchvision.models.resnet50(weights=None).eval()
    example = torch.randn(1, 3, 224, 224)
    loaded = LoadedModel(Path("resnet50.py"), "python", module, (example,), ["x"])
    options = replace(ExportOptions(opset=17), do_constant_folding=False)
    result = TorchScriptExporter().export_for_comparison(loaded, options)  # as compare's per-node analysis
    capture = result.capture
    session = create_session(result.model, "cpu").session
    all_outputs = create_session(with_all_node_outputs(result.model), "cpu").session
    feeds = feeds_for(session, ["x"], [example.numpy()])
    tolerances = ToleranceTable()

    def bare_torch() -> object:
        with torch.no_grad():
            return module(example)

    rows = {
        "bare torch": median_seconds(bare_torch),
        "bare ORT": median_seconds(lambda: session.run(None, feeds)),
        "compare one input set": median_seconds(
            lambda: compare_run(module, session, ["x"], (example,), tolerances, 0, "cpu")),
        "torch capture (all values)": median_seconds(lambda: capture.run((example,))),
        "ORT capture (all node outputs)": median_seconds(lambda: all_outputs.run(None, feeds)),
        "node analysis (whole)": median_seconds(lambda: analyze_nodes(
            result.model, result.onnx_graph, result.source_graph, capture, (example,), ["x"],
            lambda m: create_session(m, "cpu").session, tolerances, {})),
    }
    bare_pair = rows["bare torch"] + rows["bare ORT"]
    ratios = {
        "bare torch": 1.0, "bare ORT": 1.0,
        "compare one input set": rows["compare one input set"] / bare_pair,
        "torch capture (all values)": rows["torch capture (all values)"] / rows["bare torch"],
        "ORT capture (all node outputs)": rows["ORT capture (all node outputs)"] / rows["bare ORT"],
        "node analysis (whole)": rows["node analysis (whole)"] / bare_pair,
    }
    print(f"resnet50, 1x3x224x224, 1 thread, median of {REPEATS} ({len(result.onnx_graph.nodes)} ONNX nodes)")
    print(f"{'what':<34} {'seconds':>9} {'ratio':>8}  ratio to")
    for name, seconds in rows.items():
        base = "torch + ORT" if name in ("compare one input set", "node analysis (whole)") else (
            "bare torch" if "torch capture" in name else "bare ORT" if "ORT capture" in name else "itself")
        print(f"{name:<34} {seconds:>9.3f} {ratios[name]:>7.2f}x  {base}")


if __name__ == "__main__":
    main()
