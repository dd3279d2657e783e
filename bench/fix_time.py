"""`fix --auto` over the real-model corpus: what it fixes, how exactly, and what it costs.

Usage: python bench/fix_time.py [--repeats 3] [--case NAME ...] | [--held-out]

For every case of examples/corpus/, side by side in one process: one plain ``torch.onnx.export``
of the model (with ONNX_FALLTHROUGH, the only way a plain export gets through its failing nodes)
and one ``fix --auto`` (the worker's job, with the model loaded once as the worker holds it),
each the median of ``--repeats`` runs, interleaved. Then the corpus table: diagnosed right
(the first export finds exactly the declared problems), auto-fixed (nothing left, at the asked
opset), the max abs error of the fixed model in plain ONNX Runtime (CPU) against torch, and the
families of the fixes. Target (issue 11): >= 90 % of the cases fixed within 1e-3.

--held-out: instead, each model of bench/held_out_models/ (tiny configs of architectures the corpus
does not name, with several problem kinds each) through ``check`` and ``fix --auto`` as a user runs
them, each its own process (both start a worker and export once), with the fix's line saying how
many candidates were tried on the node alone and how many on the whole model. Target (issue 33):
fix --auto within 3x one check.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fixport.core.fixing.auto_fix import auto_fix
from fixport.core.loaders.loading import load_model
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.corpus import CorpusCase, list_corpus

TARGET_SHARE = 0.9
MAX_PLAIN_OPSET = 18
TARGET_FIX_OVER_CHECK = 3.0
HELD_OUT = Path(__file__).resolve().parent / "held_out_models"
MAIN = Path(__file__).resolve().parent.parent / "main.py"


def _plain_export(loaded, opset: int) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        torch.onnx.export(loaded.module, loaded.example_inputs, io.BytesIO(), opset_version=opset, dynamo=False,
                          operator_export_type=torch.onnx.OperatorExportTypes.ONNX_FALLTHROUGH)


def _plain_opset(loaded, opset: int) -> int:
    """The case's opset, or the first above it where a plain export gets through at all (a custom op
    such as torchvision::nms stops even ONNX_FALLTHROUGH below the opset its symbolic needs)."""
    for candidate in range(opset, MAX_PLAIN_OPSET + 1):
        with contextlib.suppress(Exception):  # any exporter failure: try the next opset
            _plain_export(loaded, candidate)
            return candidate
    raise RuntimeError("no opset exports this model plainly")


def _timed(action) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def _max_abs_error(onnx_path: str, loaded) -> float:
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs)
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), loaded.example_inputs)}
    actual = session.run(None, feeds)[0]
    if actual.shape != tuple(expected.shape):
        return float("inf")
    return float(np.max(np.abs(actual - expected.numpy()))) if actual.size else 0.0


def measure(case: CorpusCase, repeats: int) -> dict:
    """Side-by-side timings and the outcome of one case."""
    loaded = load_model(case.info.path)
    request = ModelRequest(str(case.info.path))
    plain, fixing, result = [], [], None
    with tempfile.TemporaryDirectory(prefix="fixport-fix-time-") as scratch:
        output = str(Path(scratch) / "fixed.onnx")
        auto_fix(AutoFixRequest(request))  # warm: the model built and cached, as in a warm worker
        plain_opset = _plain_opset(loaded, case.info.opset)
        for _ in range(repeats):
            plain.append(_timed(lambda: _plain_export(loaded, plain_opset))[0])
            elapsed, result = _timed(lambda: auto_fix(AutoFixRequest(request, output=output)))
            fixing.append(elapsed)
        declared = Counter({(e["kind"], e["reason"]): e["count"] for e in case.info.expected_unsupported})
        found = Counter((p.kind, p.reason) for p in result.before.unsupported)
        fixed = not result.after.unsupported and result.opset_raised is None
        error = _max_abs_error(output, loaded) if fixed else float("nan")
    return {"case": case.name, "library": case.library, "diagnosed": found == declared,
            "fixed": fixed and error <= case.info.fix_tolerance, "error": error,
            "kinds": len(declared), "families": sorted({c.family for c in result.choices}),
            "plain": statistics.median(plain), "fix": statistics.median(fixing),
            "plain_opset": plain_opset if plain_opset != case.info.opset else None}


def _run_cli(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MAIN), *arguments], capture_output=True, text=True, check=False)


def measure_held_out(path: Path) -> dict:
    """``check`` and ``fix --auto`` of one model file, each timed from start to exit."""
    with tempfile.TemporaryDirectory(prefix="fixport-fix-time-") as scratch:
        check, checked = _timed(lambda: _run_cli("check", str(path)))
        project = str(Path(scratch) / "p.fixport.json")
        fix, fixed = _timed(lambda: _run_cli("fix", "--auto", str(path), "-o", project, "--timeout", "600"))
    trials = next((line.strip() for line in fixed.stdout.splitlines() if line.strip().startswith("tried ")),
                  (fixed.stderr.strip().splitlines() or ["(no output)"])[-1])
    return {"model": path.stem, "check": check, "check_rc": checked.returncode, "fix": fix,
            "fix_rc": fixed.returncode, "trials": trials}


def held_out_table() -> None:
    print("| model | check | fix --auto | fix / check | fix exit | trials |")
    print("|---|---|---|---|---|---|")
    for path in sorted(HELD_OUT.glob("[!_]*.py")):
        row = measure_held_out(path)
        ratio = row["fix"] / row["check"]
        verdict = "" if ratio <= TARGET_FIX_OVER_CHECK else f" (over {TARGET_FIX_OVER_CHECK:.0f}×)"
        print(f"| {row['model']} | {row['check']:.1f} s (exit {row['check_rc']}) | {row['fix']:.1f} s | "
              f"{ratio:.1f}×{verdict} | {row['fix_rc']} | {row['trials']} |", flush=True)


def _opset_note(row: dict) -> str:
    return f" (opset {row['plain_opset']})" if row["plain_opset"] else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--held-out", action="store_true", help="check and fix --auto of bench/held_out_models/")
    args = parser.parse_args()
    if args.held_out:
        held_out_table()
        return
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    cases = [c for c in list_corpus() if not args.case or c.name in args.case]
    rows = []
    print("| case | library | diagnosed right | auto-fixed | max abs error | fix --auto | plain export | ratio |"
          " fixes by |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        if importlib.util.find_spec(case.library) is None:
            print(f"| {case.name} | {case.library} (not installed) | | | | | | | |")
            continue
        row = measure(case, args.repeats)
        rows.append(row)
        print(f"| {row['case']} | {row['library']} | {'yes' if row['diagnosed'] else 'NO'} | "
              f"{'yes' if row['fixed'] else 'NO'} | {row['error']:.1e} | {row['fix']:.2f} s | "
              f"{row['plain']:.3f} s{_opset_note(row)} | {row['fix'] / row['plain']:.0f}× | "
              f"{', '.join(row['families'])} |",
              flush=True)
    if not rows:
        return
    fixed = sum(r["fixed"] for r in rows)
    ratios = sorted(r["fix"] / r["plain"] for r in rows)
    print(f"\ndiagnosed right: {sum(r['diagnosed'] for r in rows)} of {len(rows)}; "
          f"auto-fixed within tolerance: {fixed} of {len(rows)} ({100 * fixed / len(rows):.0f} %, "
          f"target {100 * TARGET_SHARE:.0f} %); fix --auto / plain export: median "
          f"{statistics.median(ratios):.0f}× ({ratios[0]:.0f}–{ratios[-1]:.0f}×)")


if __name__ == "__main__":
    main()
