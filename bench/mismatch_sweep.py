"""Does `check` flag every silent mismatch? Over torch's OpInfo database, for each op whose plain
export works and runs in ONNX Runtime, `check` (the analyze job) is set beside `compare`'s output
comparison on the same example inputs; prints the ops each one flags and where they disagree.
Everything runs in the worker, so an op that crashes torch is listed, not fatal.

    python bench/mismatch_sweep.py [--opset 17] [--limit N] [--ops softplus,cdist]
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from opinfo_sweep import MODEL_SOURCE, sweep_parser  # noqa: E402


def main() -> None:
    args = sweep_parser(__doc__).parse_args()

    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from fixport.core.records.requests import AnalyzeRequest, CompareRequest
    from fixport.core.records.results import ModelRequest
    from fixport.core.words.vocabulary import ProblemReason
    from fixport.core.worker.client import ExportWorker

    torch.set_num_threads(1)
    wanted = set(filter(None, args.ops.split(",")))
    ops = [o for o in op_db if torch.float32 in o.supported_dtypes("cpu") and (not wanted or o.name in wanted)]
    ops = ops[:args.limit] if args.limit else ops
    compared, by_check, by_compare, errors = 0, set(), set(), []
    worker = ExportWorker(job_timeout_s=120)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fixport-mismatch-") as folder:
        for index, op in enumerate(ops):
            label = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
            path = Path(folder) / f"op_{index}.py"
            path.write_text(MODEL_SOURCE.format(name=op.name, variant=op.variant_test_name, opset=args.opset))
            model = ModelRequest(str(path))
            try:
                analysis = worker.run(AnalyzeRequest(model, options={"opset": args.opset}))
                if any(p.reason != ProblemReason.MISMATCH for p in analysis.unsupported):
                    continue  # a failing export is the fix sweep's business (opinfo_sweep.py)
                comparison = worker.run(CompareRequest(model, options={"opset": args.opset}, analyze_nodes=False))
            except Exception as error:  # a crash or a sample that cannot be built: listed, not counted
                errors.append(f"{label}: {type(error).__name__}: {str(error)[:100]}")
                continue
            compared += 1
            if any(p.reason == ProblemReason.MISMATCH for p in analysis.unsupported):
                by_check.add(label)
            if not comparison.passed:
                by_compare.add(label)
            print(f"[{index + 1}/{len(ops)}] {label}: check {'mismatch' if label in by_check else 'ok'}, "
                  f"compare {'FAIL' if label in by_compare else 'pass'}", flush=True)
    worker.stop()
    print(f"\nMismatch sweep at opset {args.opset}: {compared} ops export and run, "
          f"{time.perf_counter() - started:.0f} s")
    print(f"compare fails {len(by_compare)}: {', '.join(sorted(by_compare))}")
    print(f"check flags {len(by_check)}: {', '.join(sorted(by_check))}")
    print(f"missed by check: {', '.join(sorted(by_compare - by_check)) or 'none'}")
    print(f"flagged by check only: {', '.join(sorted(by_check - by_compare)) or 'none'}")
    for line in errors:
        print(f"  error: {line}")


if __name__ == "__main__":
    main()
