"""The cost of checking every declared shape: `check` with dynamic axes against the same `check`
without them, side by side (the same export, plus torch and ONNX Runtime at the other sizes).

Usage: python bench/shape_check.py [--repeats 5]
Prints medians and the ratio; the target is <= 1.5x one check.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from fixport.core.analysis.analysis import analyze
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

REPO = Path(__file__).resolve().parent.parent
# (model file, input name, dynamic axes): models whose check is clean, so the other sizes are run
CASES = (
    ("examples/resnet18_clean.py", "x", {0: "batch", 2: "height", 3: "width"}),
    ("examples/resnet18_clean.py", "x", {0: "batch"}),
    ("examples/autograd_inlined.py", "x", {0: "batch"}),
)


def check_s(model: str, options: dict, repeats: int) -> float:
    """Median seconds of one in-process `check` (the model loaded once, warm)."""
    request = AnalyzeRequest(ModelRequest(str(REPO / model)), options)
    analyze(request)  # warm: model loaded, first export's one-time costs paid
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        analyze(request)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'model':<32} {'dynamic axes':<34} {'check s':>8} {'+ other sizes s':>16} {'ratio':>6}")
    for model, name, axes in CASES:
        static = check_s(model, {"input_names": [name]}, args.repeats)
        dynamic = check_s(model, {"input_names": [name], "dynamic_axes": {name: axes}}, args.repeats)
        print(f"{Path(model).name:<32} {str(axes):<34} {static:>8.3f} {dynamic:>16.3f} {dynamic / static:>5.2f}x",
              flush=True)


if __name__ == "__main__":
    main()
