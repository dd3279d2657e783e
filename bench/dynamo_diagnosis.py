"""Dynamo diagnosis overhead: Fixport's DynamoExporter vs. one plain torch.onnx.export(dynamo=True).

Usage: python bench/dynamo_diagnosis.py [--repeats 5]
Both sides export (and the Fixport side also diagnoses and runs the model once in ONNX Runtime).
A plain export that fails is timed up to its exception, as a user would wait for it.
Prints medians (min-max) and the ratio diagnosis / plain export; then, once per failing example,
how long `fix --auto --exporter dynamo` takes (trial exports, ONNX Runtime runs and torch
comparisons included) and what it chose.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fixport.core.exporters.dynamo.exporter import DynamoExporter
from fixport.core.loaders.loading import load_model
from fixport.core.project.export_options import ExportOptions

REPO = Path(__file__).resolve().parent.parent
CASES = [  # (model file, opset): the clean control case and one per failure stage
    ("examples/resnet18_clean.py", 18),
    ("examples/branch_on_value_dynamo.py", 18),
    ("examples/custom_ops_dynamo.py", 18),
    ("examples/int16_square_dynamo.py", 18),
    ("examples/median_pooling_dynamo.py", 18),
    ("examples/nan_gap_max_dynamo.py", 18),
]


def _time(action: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                action()
            except Exception:  # a failing plain export: the user waited this long for the error
                pass
        times.append(time.perf_counter() - start)
    return times


def _plain(module: torch.nn.Module, inputs: tuple, opset: int) -> Callable[[], object]:
    return lambda: torch.onnx.export(module, inputs, dynamo=True, opset_version=opset, verbose=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print(f"{'model':<28} {'plain dynamo export':>22} {'fixport diagnosis':>22} {'ratio':>7}")
    ratios = []
    for relative, opset in CASES:
        loaded = load_model(REPO / relative)
        plain = _time(_plain(loaded.module, loaded.example_inputs, opset), args.repeats)
        options = ExportOptions(opset=opset, exporter="dynamo")
        diagnosis = _time(lambda loaded=loaded, options=options: DynamoExporter().export(loaded, options),
                          args.repeats)
        ratio = statistics.median(diagnosis) / statistics.median(plain)
        ratios.append(ratio)
        print(f"{Path(relative).stem:<28} {_fmt(plain):>22} {_fmt(diagnosis):>22} {ratio:>6.2f}x")
    print(f"median ratio {statistics.median(ratios):.2f}x (median of {args.repeats} runs per model)")
    _bench_auto_fix()


def _bench_auto_fix() -> None:
    """One `fix --auto` per failing example in a warm worker process, as the window's Fix all runs it."""
    from fixport.core.records.requests import AutoFixRequest, PingRequest
    from fixport.core.records.results import ModelRequest
    from fixport.core.worker.client import ExportWorker

    worker = ExportWorker(job_timeout_s=600)
    try:
        worker.run(PingRequest())
        print(f"\n{'model':<28} {'fix --auto':>10}  chosen (warm worker)")
        for relative, _ in CASES[1:]:
            start = time.perf_counter()
            result = worker.run(AutoFixRequest(ModelRequest(str(REPO / relative)), {"exporter": "dynamo"}))
            seconds = time.perf_counter() - start
            chosen = ", ".join(f"{c.kind} -> {c.template_id}" for c in result.choices) or "none (capture failure)"
            left = f"; {len(result.after.unsupported)} left" if result.after.unsupported else ""
            print(f"{Path(relative).stem:<28} {seconds:>9.1f}s  {chosen}{left}")
            for rejected in result.rejected:
                print(f"{'':<40}rejected {rejected.line()[:200]}")
    finally:
        worker.stop()


def _fmt(times: list[float]) -> str:
    return f"{statistics.median(times):.2f}s ({min(times):.2f}-{max(times):.2f})"


if __name__ == "__main__":
    main()
