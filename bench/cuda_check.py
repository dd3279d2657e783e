"""Every example and corpus model on CUDA beside CPU: strict, deployed, and the torch reference on the GPU.

    python bench/cuda_check.py [--jobs N] [--only NAME,NAME] [--out DIR] [--timeout 900]

For every example of examples/, every model of examples/corpus/ and every model of
bench/cuda_models/ (ResNet-50, RAFT, BERT with SDPA): `fix --auto` in a warm worker, then
`compare` with its fixes four times, as the command line's flags ask:

- ``cpu``: ``--provider cpu`` (the reference figure);
- ``cuda strict``: ``--provider cuda --precision strict`` (TF32 and the fused kernels' shortcuts off);
- ``cuda deployed``: ``--provider cuda --precision deployed``, held to the TF32 tolerance row;
- ``torch on cuda``: ``--provider cuda --torch-device cuda`` (the reference computed on the GPU).

Per model and run: pass, the largest error over the outputs, the nodes that fell back to CPU
while CUDA was asked, whether the per-node analysis ran, and the seconds. ``DIR/cuda_check.json``
holds everything and ``DIR/cuda_check.md`` the table, stamped with the date, commit, GPU, torch and
ONNX Runtime. ``--jobs N`` runs N workers side by side (one torch thread each).
A model whose library is missing here (kornia, say) is listed as skipped with the reason.
"""
from __future__ import annotations

import argparse
import json
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fixport.core.foundation.errors import FixportError
from fixport.core.records.compare_result import CompareResult
from fixport.core.records.requests import AutoFixRequest, CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.core.sweep.stamp import machine_stamp, stamp_markdown
from fixport.core.worker.client import ExportWorker
from fixport.examples.catalog import list_examples
from fixport.examples.corpus import list_corpus

CUDA_MODELS = Path(__file__).resolve().parent / "cuda_models"
# name -> CompareRequest settings; "cpu" first: the others are read beside it.
RUNS: dict[str, dict[str, str]] = {
    "cpu": {"provider": "cpu"},
    "cuda strict": {"provider": "cuda", "precision": "strict"},
    "cuda deployed": {"provider": "cuda", "precision": "deployed"},
    "torch on cuda": {"provider": "cuda", "precision": "strict", "torch_device": "cuda"},
}


@dataclass
class RunRow:
    """One compare of one model."""

    passed: bool
    max_abs: float
    seconds: float
    providers_used: list[str]
    torch_device: str
    tolerance: str
    cpu_fallback_nodes: list[str] = field(default_factory=list)
    nodes_compared: int = 0
    messages: list[str] = field(default_factory=list)
    error: str = ""
    # The worst output: how far off, and the size of torch's values (TF32's error scales with it).
    worst_output: dict[str, float] = field(default_factory=dict)


@dataclass
class ModelRow:
    """Everything measured for one model."""

    name: str
    group: str
    fixes: list[str] = field(default_factory=list)
    problems_left: int = 0
    skipped: str = ""
    runs: dict[str, RunRow] = field(default_factory=dict)


def models(only: set[str] | None) -> list[tuple[str, str, Path]]:
    """(name, group, path) of every model to check."""
    found = [(e.name, "example", e.path) for e in list_examples()]
    found += [(c.info.name, "corpus", c.info.path) for c in list_corpus()]
    found += [(p.stem, "cuda_models", p) for p in sorted(CUDA_MODELS.glob("*.py")) if not p.stem.startswith("_")]
    return [m for m in found if only is None or m[0] in only]


def largest_error(result: CompareResult) -> float:
    """The largest absolute error over the outputs (nan when none could be compared)."""
    errors = [o.max_abs for o in result.outputs if not math.isnan(o.max_abs)]
    return max(errors) if errors else math.nan


def worst_output(result: CompareResult) -> dict[str, float]:
    """Largest error, relative error, cosine, mismatching fraction and torch's largest value (sampled)."""
    if not result.outputs:
        return {}
    worst = max(result.outputs, key=lambda o: -1.0 if math.isnan(o.max_abs) else o.max_abs)
    scale = max((abs(v) for v in worst.scatter.torch_values), default=math.nan)
    return {"max_abs": worst.max_abs, "max_rel": worst.max_rel, "cosine": worst.cosine,
            "mismatch_fraction": worst.mismatch_fraction, "torch_max_abs_sampled": scale,
            "rtol": worst.rtol, "atol": worst.atol}


def run_row(result: CompareResult, seconds: float) -> RunRow:
    placement = result.placement
    fallback = placement.cpu_nodes_while_cuda_asked(result.provider_requested) if placement else []
    return RunRow(result.passed, largest_error(result), seconds, list(result.providers_used), result.torch_device,
                  result.tolerance_name, fallback,
                  len(result.node_analysis.nodes) if result.node_analysis else 0, list(result.messages),
                  worst_output=worst_output(result))


def check_model(worker: ExportWorker, name: str, group: str, path: Path) -> ModelRow:
    """fix --auto, then the four compares with its fixes."""
    row = ModelRow(name, group)
    model = ModelRequest(path=str(path))
    try:
        fixed = worker.run(AutoFixRequest(model))
    except FixportError as error:
        row.skipped = error.message
        return row
    options = {"opset": fixed.opset_raised[1]} if fixed.opset_raised else {}
    row.fixes = [f"{m.target_kind} -> {m.template_id}" for m in fixed.mappings]
    row.problems_left = len(fixed.after.unsupported)
    for run_name, settings in RUNS.items():
        started = time.perf_counter()
        try:
            result = worker.run(CompareRequest(model, dict(options), list(fixed.mappings), **settings))
        except FixportError as error:
            row.runs[run_name] = RunRow(False, math.nan, time.perf_counter() - started, [], "", "",
                                        error=error.message)
            continue
        row.runs[run_name] = run_row(result, time.perf_counter() - started)
    return row


def check_all(todo: list[tuple[str, str, Path]], jobs: int, timeout_s: float,
              on_row: Callable[[list[ModelRow]], None] = lambda rows: None) -> list[ModelRow]:
    """Check every model, ``jobs`` workers side by side; rows in the order given (``on_row`` gets
    the rows so far after each model, to keep them should the run be stopped)."""
    pending: queue.Queue[tuple[int, tuple[str, str, Path]]] = queue.Queue()
    for item in enumerate(todo):
        pending.put(item)
    rows: dict[int, ModelRow] = {}
    lock = threading.Lock()

    def drain() -> None:
        worker = ExportWorker(job_timeout_s=timeout_s)
        try:
            while True:
                try:
                    index, (name, group, path) = pending.get_nowait()
                except queue.Empty:
                    return
                started = time.perf_counter()
                rows[index] = check_model(worker, name, group, path)
                print(f"{name}: {summary_line(rows[index])} ({time.perf_counter() - started:.0f} s)", flush=True)
                with lock:
                    on_row([rows[i] for i in sorted(rows)])
        finally:
            worker.stop()

    threads = [threading.Thread(target=drain) for _ in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [rows[i] for i in sorted(rows)]


def summary_line(row: ModelRow) -> str:
    if row.skipped:
        return f"skipped: {row.skipped}"
    return ", ".join(f"{name} {'PASS' if run.passed else 'FAIL'} {run.max_abs:.1e}" for name, run in row.runs.items())


def markdown(rows: list[ModelRow], stamp: dict[str, Any]) -> str:
    """The table: per model, each run's verdict and largest error beside the CPU figure."""
    lines = [stamp_markdown(stamp), "",
             "| model | fixes | " + " | ".join(RUNS) + " | nodes on CPU (CUDA asked) | per-node on CUDA |",
             "|---|---|" + "---|" * len(RUNS) + "---|---|"]
    for row in rows:
        if row.skipped:
            lines.append(f"| {row.name} | skipped: {row.skipped.splitlines()[0][:80]} |" + " |" * (len(RUNS) + 2))
            continue
        cells = []
        for name in RUNS:
            run = row.runs.get(name)
            cells.append("—" if run is None else f"{'PASS' if run.passed else '**FAIL**'} {run.max_abs:.1e}")
        strict = row.runs.get("cuda strict")
        fallback = ", ".join(strict.cpu_fallback_nodes[:4]) + (" …" if len(strict.cpu_fallback_nodes) > 4 else "") \
            if strict else ""
        per_node = f"{strict.nodes_compared} nodes" if strict else ""
        lines.append(f"| {row.name} | {len(row.fixes)} | " + " | ".join(cells) + f" | {fallback} | {per_node} |")
    passing_cpu = [r for r in rows if not r.skipped and r.runs.get("cpu") and r.runs["cpu"].passed]
    lines.append("")
    for name in list(RUNS)[1:]:
        held = sum(1 for r in passing_cpu if r.runs.get(name) and r.runs[name].passed)
        lines.append(f"- {name}: {held}/{len(passing_cpu)} of the models that pass on CPU pass.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one job may take")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    stamp = machine_stamp()
    args.out.mkdir(parents=True, exist_ok=True)

    def write(rows: list[ModelRow]) -> None:
        (args.out / "cuda_check.json").write_text(json.dumps({"stamp": stamp, "rows": [asdict(r) for r in rows]},
                                                             indent=1, default=str), encoding="utf-8")
        (args.out / "cuda_check.md").write_text(markdown(rows, stamp), encoding="utf-8")

    rows = check_all(models(only), args.jobs, args.timeout, on_row=write)
    write(rows)
    print(markdown(rows, stamp))


if __name__ == "__main__":
    main()
