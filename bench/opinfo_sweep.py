"""Sweep torch's OpInfo database at one opset: which ops fail the exporter, and does `fix --auto` fix them?

Each op's first float32 CPU sample is wrapped in a one-op module (tensor arguments become model
inputs, the rest constants) written as a model file; ops whose plain export (``dynamo=False``, or
``dynamo=True`` with ``--exporter dynamo``) fails or does not run in ONNX Runtime go through
`fix --auto` with the same exporter in the worker. Prints, per fix family, how many ops it fixed,
and the totals: failing, diagnosed, fixed and the percentage.

    python bench/opinfo_sweep.py [--exporter torchscript|dynamo] [--opset 17] [--limit N] [--ops cosh,diff]
                                 [--json sweep.json]

``--json`` writes every failing op with its outcome and, for the ops left unfixed, why each
candidate was rejected (the groups to work on next).
"""
from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path

from fixport.bench.plain_export import PlainExportProbe
from fixport.core.words.vocabulary import EXPORTERS

MODEL_SOURCE = '''
import torch
from torch.testing._internal.common_methods_invocations import op_db

OP_NAME, VARIANT = {name!r}, {variant!r}
FIXPORT_EXAMPLE = {{"opset": {opset}}}


def first_sample():
    torch.manual_seed(0)
    op = next(o for o in op_db if (o.name, o.variant_test_name) == (OP_NAME, VARIANT))
    sample = next(iter(op.sample_inputs("cpu", torch.float32, requires_grad=False)))
    return op, sample


class OneOp(torch.nn.Module):
    def __init__(self, op, sample):
        super().__init__()
        self.op, self.sample = op, sample
        self.slots = [i for i, a in enumerate([sample.input, *sample.args]) if isinstance(a, torch.Tensor)]

    def forward(self, *tensors):
        values = [self.sample.input, *self.sample.args]
        for slot, tensor in zip(self.slots, tensors):
            values[slot] = tensor
        return self.op.op(*values, **self.sample.kwargs)


def build():
    op, sample = first_sample()
    module = OneOp(op, sample).eval()
    values = [sample.input, *sample.args]
    return module, tuple(values[i] for i in module.slots)
'''


def sweep_parser(doc: str) -> argparse.ArgumentParser:
    """The options every OpInfo sweep takes: --opset, --limit, --ops."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--limit", type=int, default=0, help="only the first N ops (0: all)")
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names to sweep")
    return parser


def main() -> None:
    parser = sweep_parser(__doc__)
    parser.add_argument("--exporter", choices=EXPORTERS, default="torchscript")
    parser.add_argument("--start", type=int, default=0, help="skip the first N ops")
    parser.add_argument("--json", default="", help="write every failing op's outcome and rejections here")
    args = parser.parse_args()

    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from fixport.core.records.requests import AutoFixRequest
    from fixport.core.records.results import ModelRequest
    from fixport.core.worker.client import ExportWorker

    torch.set_num_threads(1)
    wanted = set(filter(None, args.ops.split(",")))
    ops = [o for o in op_db if torch.float32 in o.supported_dtypes("cpu") and (not wanted or o.name in wanted)]
    ops = ops[:args.limit] if args.limit else ops
    failing, diagnosed, fixed, families = [], [], [], collections.Counter()
    unfixed: list[str] = []
    records: list[dict] = []
    worker = ExportWorker(job_timeout_s=120)
    probe = PlainExportProbe()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fixport-opinfo-") as folder:
        for index, op in enumerate(ops):
            if index < args.start:
                continue
            print(f"[{index + 1}/{len(ops)}] {op.name} ...", flush=True)
            label = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
            path = Path(folder) / f"op_{index}.py"
            path.write_text(MODEL_SOURCE.format(name=op.name, variant=op.variant_test_name, opset=args.opset))
            why = probe.why_failing(path, args.opset, args.exporter)
            if why is None:
                continue
            failing.append(label)
            try:
                result = worker.run(AutoFixRequest(ModelRequest(str(path)), {"exporter": args.exporter},
                                                  keep_opset=True))
            except Exception as error:  # the worker's own error (a crash, a timeout): counted as not fixed
                unfixed.append(f"{label}: {type(error).__name__}: {str(error)[:100]}")
                records.append({"op": label, "plain": why, "fixed": False, "error": str(error)[:300]})
                continue
            if result.before.unsupported:
                diagnosed.append(label)
            runnable = all(c.runs_in_onnxruntime for c in result.choices)
            if result.before.unsupported and not result.after.unsupported and runnable:
                fixed.append(label)
                families.update({c.family for c in result.choices})
            else:
                left = ", ".join(sorted({p.display_kind for p in result.after.unsupported}))
                unfixed.append(f"{label}: {left or 'not diagnosed: ' + why}")
            records.append({"op": label, "plain": why, "fixed": label in fixed,
                            "families": [c.family for c in result.choices],
                            "problems": sorted({f"{p.display_kind}: {p.reason}" for p in result.before.unsupported}),
                            "left": sorted({p.display_kind for p in result.after.unsupported}),
                            "left_reasons": sorted({f"{p.display_kind}: {p.reason}" for p in result.after.unsupported}),
                            "rejected": [r.line() for r in result.rejected]})
            print(f"[{index + 1}/{len(ops)}] {label}: {'fixed' if label in fixed else 'not fixed'} "
                  f"{'by ' + ','.join(c.family for c in result.choices) if label in fixed else ''}", flush=True)
    worker.stop()
    probe.stop()
    print(f"\nOpInfo sweep, {args.exporter} exporter, at opset {args.opset}: {len(ops)} ops, "
          f"{time.perf_counter() - started:.0f} s")
    print("Fixed, by the family that made the fix:")
    for family, count in families.most_common():
        print(f"  {family:<24} {count}")
    share = 100.0 * len(fixed) / len(failing) if failing else 100.0
    print(f"failing {len(failing)}, diagnosed {len(diagnosed)}, fixed by fix --auto {len(fixed)} ({share:.0f} %)")
    print("\nNot fixed:")
    for line in unfixed:
        print(f"  {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
