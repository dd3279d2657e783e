"""Architectures from outside the corpus, as a new user runs them: no silent PASS, no unplaced problem, no crash.

    python bench/held_out_sweep.py [--only NAME,NAME] [--exporters torchscript,dynamo] [--out DIR]

For every model file of bench/held_out/ (tiny configs of diffusers, torch-geometric, MONAI,
ultralytics, segmentation-models-pytorch, x-transformers and current transformers models, random
weights) and each exporter, in a warm worker: ``check``; ``fix --auto`` when it lists problems;
``compare --runs 2`` with the fixes, saving the export. Then, in this process, an independent check
of the saved export: torch and ONNX Runtime on the file's ``other_inputs()`` (another valid input
set the model file gives, e.g. another image grid), held to the compare's tolerance.

Each row is judged:

- **crash**: a worker crash, or an error Fixport calls its own bug;
- **unplaced**: a problem listed with no ONNX node, no source node and no scope (``onnx::?``);
- **silent PASS**: Fixport said the export is right (clean check, or compare PASS) and the
  independent check at other inputs found it wrong;
- otherwise **clean**, **fixed**, or **diagnosed** (problems left, each named and placed).

Writes ``DIR/held_out_sweep.json`` and ``.md``, stamped with the date, commit and machine.
A model whose library is not installed is listed as skipped (``pip install -e ".[sweep]"``).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fixport.core.foundation.errors import FixportError
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest, CompareRequest
from fixport.core.records.results import AnalysisResult, ModelRequest
from fixport.core.sweep.stamp import machine_stamp, stamp_markdown
from fixport.core.worker.client import ExportWorker

HELD_OUT = Path(__file__).resolve().parent / "held_out"
CRASH_WORDS = ("crashed", "Fixport bug", "a bug in Fixport")
UNPLACED_KINDS = ("onnx::?", "?")


@dataclass
class Row:
    """One model and one exporter."""

    model: str
    exporter: str
    verdict: str = ""
    problems: list[str] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    compare_passed: bool | None = None
    compare_max_abs: float | None = None
    other_inputs_max_abs: float | None = None
    other_inputs_ok: bool | None = None
    error: str = ""
    seconds: float = 0.0
    # What fix --auto tried and did not keep, and why; the message of each problem left (to read why)
    rejected: list[str] = field(default_factory=list)
    left_messages: list[str] = field(default_factory=list)


def _problem_lines(analysis: AnalysisResult) -> list[str]:
    return [f"{p.display_kind}: {p.reason}" for p in analysis.unsupported]


def _unplaced(analysis: AnalysisResult) -> list[str]:
    """Problems no one could act on: an unknown kind, or no ONNX node, scope or line and no op named
    (torch disagreeing with itself on an op has no line of the model: the op is its place)."""
    return [f"{p.display_kind}: {p.reason}" for p in analysis.unsupported
            if p.display_kind in UNPLACED_KINDS or not (p.onnx_node or p.scope or p.source or _names_an_op(p.instance))]


def _names_an_op(instance: str) -> bool:
    """'prims.sum.default', 'aten::cumsum': an op's name, not a bare failure type."""
    return "::" in instance or instance.count(".") >= 1 and " " not in instance


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"held_out_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def check_at_other_inputs(path: Path, onnx_file: Path, rtol: float, atol: float) -> tuple[float | None, bool | None]:
    """Torch and ONNX Runtime on the model file's other_inputs(): the largest difference and whether
    it is within (rtol, atol); (None, None) where the file gives no other inputs."""
    import onnxruntime as ort
    import torch

    module = _load(path)
    if not hasattr(module, "other_inputs"):
        return None, None
    model, _ = module.build()
    inputs = tuple(module.other_inputs())
    with torch.no_grad():
        expected = model.eval()(*inputs)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)}  # ONNX keeps only what it reads
    try:
        actual = session.run(None, feeds)
    except Exception:  # ONNX Runtime cannot run it at these inputs: as wrong as a wrong number
        return math.inf, False
    worst, within = 0.0, True
    for want, got in zip(expected, actual):
        want = want.detach().float().numpy()
        if want.shape != got.shape:
            return math.inf, False
        worst = max(worst, float(np.abs(want - got).max(initial=0.0)))
        within = within and bool(np.allclose(got, want, rtol=rtol, atol=atol))
    return worst, within


def sweep_one(worker: ExportWorker, path: Path, exporter: str, folder: Path, timeout_s: float,
              options: dict[str, Any] | None = None) -> Row:
    """check, fix --auto, compare, and the independent check of the saved export; ``options`` are
    export options the user sets besides the exporter (bench/dynamic_axes_sweep.py's dynamic axes)."""
    row, started = Row(path.stem, exporter), time.monotonic()
    request, options = ModelRequest(str(path), trust=True), {**(options or {}), "exporter": exporter}
    onnx_file = folder / f"{path.stem}-{exporter}.onnx"
    try:
        check = worker.run(AnalyzeRequest(request, options, output=str(onnx_file)), timeout_s=timeout_s)
        row.problems, row.unplaced = _problem_lines(check), _unplaced(check)
        mappings, fix_options = [], dict(options)
        if check.unsupported:
            fixed = worker.run(AutoFixRequest(request, options, analysis=check, output=str(onnx_file)),
                               timeout_s=timeout_s)
            mappings = list(fixed.mappings)
            row.fixes = [f"{c.kind} -> {c.template_id}" for c in fixed.choices] + \
                [f"capture setting {s}" for s in fixed.capture_settings]
            row.left = _problem_lines(fixed.after)
            row.rejected = [r.line()[:300] for r in fixed.rejected]
            row.left_messages = [f"{p.display_kind} at {p.source or p.scope}: {p.message[:500]}"
                                 for p in fixed.after.unsupported]
            row.unplaced += _unplaced(fixed.after)
            fix_options.update(fixed.option_edits(options, pin_opset=False))
        if not row.left:
            compared = worker.run(CompareRequest(request, fix_options, mappings, runs=2), timeout_s=timeout_s)
            row.compare_passed = compared.passed
            errors = [o.max_abs for o in compared.outputs if not math.isnan(o.max_abs)]
            row.compare_max_abs = max(errors) if errors else None
            rtol, atol = max(((o.rtol, o.atol) for o in compared.outputs), default=(1e-3, 1e-5))
            if onnx_file.is_file():
                row.other_inputs_max_abs, row.other_inputs_ok = check_at_other_inputs(path, onnx_file, rtol, atol)
    except FixportError as error:
        row.error = error.message.splitlines()[0][:300]
    except Exception as error:  # the harness's own check (a model file's other_inputs, say)
        row.error = f"harness: {type(error).__name__}: {str(error).splitlines()[0][:300]}"
    row.seconds = time.monotonic() - started
    row.verdict = judge(row)
    return row


def judge(row: Row) -> str:
    if row.error and any(word in row.error for word in CRASH_WORDS):
        return "crash"
    if row.unplaced:
        return "unplaced"
    said_right = (not row.problems or not row.left) and row.compare_passed is not False and not row.error
    if said_right and row.other_inputs_ok is False:
        return "silent PASS"
    if row.error:
        return "error"
    if row.left:
        return "diagnosed"
    if row.compare_passed is False:
        return "compare FAIL"
    return "fixed" if row.problems else "clean"


def markdown(rows: list[Row], skipped: dict[str, str], stamp: dict[str, Any]) -> str:
    lines = [stamp_markdown(stamp), "",
             "| model | exporter | verdict | check found | fix --auto chose | left | compare | other inputs | s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        compare = "—" if r.compare_passed is None else \
            f"{'PASS' if r.compare_passed else 'FAIL'} {r.compare_max_abs or 0:.1e}"
        other = "—" if r.other_inputs_ok is None else \
            f"{'ok' if r.other_inputs_ok else 'WRONG'} {r.other_inputs_max_abs:.1e}"
        left = ", ".join(r.left) + (f" error: {r.error}" if r.error else "")
        lines.append(f"| {r.model} | {r.exporter} | **{r.verdict}** | {', '.join(sorted(set(r.problems)))} | "
                     f"{'; '.join(r.fixes)} | {left} | {compare} | {other} | {r.seconds:.0f} |")
    for name, why in skipped.items():
        lines.append(f"| {name} | — | skipped | {why} | | | | | |")
    bad = [r for r in rows if r.verdict in ("crash", "unplaced", "silent PASS")]
    lines += ["", f"{len(rows)} runs: {len(bad)} crash, unplaced problem or silent PASS."]
    return "\n".join(lines) + "\n"


def missing_library(path: Path) -> str:
    """The import a model file needs that is not installed, or ''."""
    text = path.read_text(encoding="utf-8")
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("import", "from"):
            top = words[1].split(".")[0]
            if top not in ("torch", "__future__", "fixport") and importlib.util.find_spec(top) is None:
                return f"needs {top}"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--exporters", default="torchscript,dynamo")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    paths = [p for p in sorted(HELD_OUT.glob("*.py")) if not p.stem.startswith("_") and (not only or p.stem in only)]
    stamp, rows, skipped = machine_stamp(), [], {}
    worker = ExportWorker(job_timeout_s=args.timeout)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory() as folder:
            for path in paths:
                why = missing_library(path)
                if why:
                    skipped[path.stem] = why
                    continue
                for exporter in args.exporters.split(","):
                    rows.append(sweep_one(worker, path, exporter, Path(folder), args.timeout))
                    print(f"{path.stem} {exporter}: {rows[-1].verdict} ({rows[-1].seconds:.0f} s) "
                          f"{rows[-1].error[:120]}", flush=True)
                    (args.out / "held_out_sweep.json").write_text(json.dumps(
                        {"stamp": stamp, "rows": [asdict(r) for r in rows], "skipped": skipped}, indent=1,
                        default=str), encoding="utf-8")
    finally:
        worker.stop()
    (args.out / "held_out_sweep.md").write_text(markdown(rows, skipped, stamp), encoding="utf-8")
    print(markdown(rows, skipped, stamp))


if __name__ == "__main__":
    main()
