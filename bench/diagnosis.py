"""Diagnosis overhead: a Fixport diagnosing export vs. one plain torch.onnx.export, side by side.

Usage: python bench/diagnosis.py [--repeats 5]
Prints medians (min-max) and the ratio diagnosis / plain export. The target is <= 1.5x.
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from core.exporter import ExportOptions, TorchScriptExporter  # noqa: E402
from core.loading import load_model  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CASES = [  # (model file, opset)
    ("examples/resnet18_clean.py", 17),
    ("examples/threshold.py", 12),
    ("examples/vit_tiny.py", 12),
    ("examples/autograd_python_op.py", 12),
]


def _time(action: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def _plain_export(loaded, options: ExportOptions) -> None:
    """What a user runs today; on a failing model it stops at the first error."""
    try:
        torch.onnx.export(loaded.module, loaded.example_inputs, io.BytesIO(), opset_version=options.opset,
                          autograd_inlining=options.autograd_inlining, dynamo=False)
    except Exception:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    exporter = TorchScriptExporter()
    print(f"{'model':<28} {'plain export s':>18} {'diagnosis s':>18} {'ratio':>6} {'+ORT check s':>18} {'ratio':>6}")
    for relative, opset in CASES:
        path = REPO / relative
        if not path.exists():
            continue
        loaded = load_model(path)
        options = ExportOptions(opset=opset, **loaded.settings.get("export_options", {}))
        _plain_export(loaded, options)  # warm caches once for all three
        plain = _time(lambda: _plain_export(loaded, options), args.repeats)
        diagnose = _time(lambda: exporter.export(loaded, options, run_check=False), args.repeats)
        checked = _time(lambda: exporter.export(loaded, options, run_check=True), args.repeats)
        p, d, c = (statistics.median(t) for t in (plain, diagnose, checked))
        print(f"{path.stem:<28} {p:7.3f} ({min(plain):.3f}-{max(plain):.3f}) {d:7.3f} ({min(diagnose):.3f}-"
              f"{max(diagnose):.3f}) {d / p:5.2f}x {c:7.3f} ({min(checked):.3f}-{max(checked):.3f}) {c / p:5.2f}x")


if __name__ == "__main__":
    main()
