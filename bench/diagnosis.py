"""Diagnosis overhead: a Fixport diagnosing export vs. one plain torch.onnx.export, side by side.

Usage: python bench/diagnosis.py [--repeats 5]
Prints medians (min-max) and the ratio diagnosis / plain export. The target is <= 1.5x.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fixport.core.exporters.torchscript import ExportOptions, TorchScriptExporter  # noqa: E402
from fixport.core.loaders.loading import load_model  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CASES = [  # (model file, opset)
    ("examples/resnet18_clean.py", 17),
    ("examples/threshold.py", 12),
    ("examples/vit_tiny.py", 12),
    ("examples/autograd_python_op.py", 12),
    ("examples/swin_tiny.py", 10),
    ("examples/maxvit_tiny.py", 11),
]


def _time(action: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def _plain_export(loaded, options: ExportOptions) -> None:
    """One complete plain export of the same model. A failing model would stop at its first
    error, so it is exported with ONNX_FALLTHROUGH, which converts everything else the same
    way and passes the failing nodes through as they are."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        torch.onnx.export(loaded.module, loaded.example_inputs, io.BytesIO(), opset_version=options.opset,
                          autograd_inlining=options.autograd_inlining, dynamo=False,
                          operator_export_type=torch.onnx.OperatorExportTypes.ONNX_FALLTHROUGH)


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
        exporter.export(loaded, options, run_check=True)
        plain = _time(partial(_plain_export, loaded, options), args.repeats)
        diagnose = _time(partial(exporter.export, loaded, options, run_check=False), args.repeats)
        checked = _time(partial(exporter.export, loaded, options, run_check=True), args.repeats)
        p, d, c = (statistics.median(t) for t in (plain, diagnose, checked))
        print(f"{path.stem:<28} {p:7.3f} ({min(plain):.3f}-{max(plain):.3f}) {d:7.3f} ({min(diagnose):.3f}-"
              f"{max(diagnose):.3f}) {d / p:5.2f}x {c:7.3f} ({min(checked):.3f}-{max(checked):.3f}) {c / p:5.2f}x")


if __name__ == "__main__":
    main()
