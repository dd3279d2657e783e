"""Diagnosis overhead: a Fixport diagnosing export vs. one plain torch.onnx.export, side by side.

Usage: python bench/diagnosis.py [--repeats 5] [--markdown FILE] [--json FILE]
Prints medians (min-max) and the ratio diagnosis / plain export. The target is <= 1.5x.
``--markdown`` and ``--json`` write the same table, stamped with the date, commit, machine and load
(docs/benchmarks/diagnosis.md is this script's own output).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fixport.core.exporters.torchscript.exporter import TorchScriptExporter  # noqa: E402
from fixport.core.loaders.loading import load_model  # noqa: E402
from fixport.core.project.export_options import ExportOptions
from fixport.core.sweep.stamp import machine_stamp, stamp_markdown  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CASES = [  # (model file, opset)
    ("examples/resnet18_clean.py", 17),
    ("examples/threshold.py", 12),
    ("examples/vit_tiny.py", 12),
    ("examples/autograd_python_op.py", 12),
    ("examples/swin_tiny.py", 10),
    ("examples/maxvit_tiny.py", 11),
]


@dataclass
class Row:
    """One model's medians and ranges, in seconds."""

    model: str
    opset: int
    plain_s: list[float]
    diagnosis_s: list[float]
    checked_s: list[float]

    def medians(self) -> tuple[float, float, float]:
        return (statistics.median(self.plain_s), statistics.median(self.diagnosis_s),
                statistics.median(self.checked_s))


def _span(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} ({min(times):.3f}-{max(times):.3f})"


def markdown(rows: list[Row], stamp: dict[str, Any], repeats: int) -> str:
    """The table as the docs include it: medians of ``repeats`` with min-max, and the ratios."""
    lines = [stamp_markdown(stamp), "",
             f"Seconds, median of {repeats} (min-max), one thread; ratios to the plain export.", "",
             "| model | opset | plain export | diagnosis | ratio | + ONNX Runtime check | ratio |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        plain, diagnose, checked = row.medians()
        lines.append(f"| {row.model} | {row.opset} | {_span(row.plain_s)} | {_span(row.diagnosis_s)} | "
                     f"{diagnose / plain:.2f}x | {_span(row.checked_s)} | {checked / plain:.2f}x |")
    return "\n".join(lines) + "\n"


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
    parser.add_argument("--markdown", type=Path, help="write the stamped table here")
    parser.add_argument("--json", type=Path, help="write the stamp and every timing here")
    args = parser.parse_args()
    stamp, rows = machine_stamp(), []
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
        rows.append(Row(path.stem, opset, plain, diagnose, checked))
        p, d, c = rows[-1].medians()
        print(f"{path.stem:<28} {p:7.3f} ({min(plain):.3f}-{max(plain):.3f}) {d:7.3f} ({min(diagnose):.3f}-"
              f"{max(diagnose):.3f}) {d / p:5.2f}x {c:7.3f} ({min(checked):.3f}-{max(checked):.3f}) {c / p:5.2f}x")
    if args.markdown:
        args.markdown.write_text(markdown(rows, stamp, args.repeats), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"stamp": stamp, "repeats": args.repeats, "rows": [asdict(r) for r in rows]},
                                        indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
