"""Does ONNX Runtime's kernel table predict which nodes it refuses? Over torch's OpInfo database,
every op in several dtypes is exported plainly (TorchScript) and loaded in ONNX Runtime on CPU;
``kernel_types.kernel_gaps`` reads the same export. A model ONNX Runtime loads must have no gap
(a gap there is a false alarm in `check`), and a model it refuses for want of a kernel ("Could not
find an implementation", or a "Type Error" of the op's schema) should have its node among the gaps.

    python bench/kernel_gaps_sweep.py [--opset 17] [--limit N] [--ops cumsum,sort]
"""
from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from opinfo_sweep import sweep_parser  # noqa: E402

DTYPES = ("float32", "float64", "int64", "int32", "bool", "float16", "int8", "uint8")
PER_OP_SECONDS = 30
NO_KERNEL = ("Could not find an implementation", "Type Error")  # no kernel; the schema takes no such type


def _timeout(_signum, _frame):
    raise TimeoutError("op took too long")


def main() -> None:
    args = sweep_parser(__doc__).parse_args()

    import onnxruntime  # noqa: F401  (imported once, before the children fork)
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import fixport.core.onnx_io.kernel_types  # noqa: F401

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _timeout)
    wanted = set(filter(None, args.ops.split(",")))
    ops = [o for o in op_db if not wanted or o.name in wanted]
    ops = ops[:args.limit] if args.limit else ops
    loaded = refused = predicted = crashed = 0
    false_alarms: list[str] = []
    missed: list[str] = []
    started = time.perf_counter()
    for op in ops:
        outcomes = _in_a_child(lambda op=op: _sweep_op(op, args.opset))
        if outcomes is None:  # torch or ONNX Runtime crashed on one of its samples
            crashed += 1
            continue
        for label, outcome, detail in outcomes:
            if outcome == "loaded":
                loaded += 1
                if detail:
                    false_alarms.append(f"{label}: {detail}")
            elif outcome in ("predicted", "missed"):
                refused += 1
                predicted += outcome == "predicted"
                if outcome == "missed":
                    missed.append(f"{label}: {detail}")
    print(f"kernel gaps over OpInfo, opset {args.opset}, {time.perf_counter() - started:.0f} s")
    print(f"  loaded by ONNX Runtime: {loaded}, of which flagged (false alarms): {len(false_alarms)}")
    print(f"  refused for want of a kernel: {refused}, of which predicted: {predicted}")
    print(f"  ops whose samples crashed torch or ONNX Runtime (skipped): {crashed}")
    for line in false_alarms:
        print(f"  false alarm: {line}")
    for line in missed:
        print(f"  missed: {line}")


def _sweep_op(op, opset: int) -> list[tuple[str, str, str]]:
    """(label, "loaded" | "predicted" | "missed", detail) for each dtype of ``op`` that exports."""
    import onnx
    import onnxruntime as ort
    import torch

    from fixport.core.onnx_io.kernel_types import kernel_gaps
    from fixport.core.onnx_io.onnx_graph import onnx_to_graph

    options = ort.SessionOptions()
    options.log_severity_level = 4
    outcomes = []
    for dtype_name in DTYPES:
        dtype = getattr(torch, dtype_name)
        if dtype not in op.supported_dtypes("cpu"):
            continue
        label = f"{op.name}{'.' + op.variant_test_name if op.variant_test_name else ''}[{dtype_name}]"
        signal.alarm(PER_OP_SECONDS)
        try:
            sample = next(iter(op.sample_inputs("cpu", dtype, requires_grad=False)))
            values = [sample.input, *sample.args]
            slots = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]

            def forward(*tensors, values=values, slots=slots, sample=sample):
                values = list(values)
                for slot, tensor in zip(slots, tensors):
                    values[slot] = tensor
                return op.op(*values, **sample.kwargs)

            buffer = io.BytesIO()
            torch.onnx.export(_Lambda(forward), tuple(values[i] for i in slots), buffer, opset_version=opset,
                              dynamo=False)
            model = onnx.load_model_from_string(buffer.getvalue())
        except Exception:  # not exportable plainly (or no sample): opinfo_sweep.py's business
            continue
        finally:
            signal.alarm(0)
        gaps = {(gap.node.name, gap.node.op_type) for gap in kernel_gaps(onnx_to_graph(model), model)}
        try:
            ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        except Exception as error:  # ONNX Runtime's own exception types
            text = str(error)
            if any(marker in text for marker in NO_KERNEL):
                # ONNX Runtime names the node "(name)" or "name 'name'", and the op "for Op(version)"
                hit = any(f"({name})" in text or f"name '{name}'" in text or f"for {op_type}(" in text
                          for name, op_type in gaps)
                outcomes.append((label, "predicted" if hit else "missed", text.splitlines()[0][:160]))
            continue
        outcomes.append((label, "loaded", ", ".join(sorted(name or op_type for name, op_type in gaps))))
    return outcomes


def _in_a_child(work):
    """``work()``'s result from a forked child (its output silenced), or None when it crashed."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            data = json.dumps(work()).encode()
        except BaseException:
            os._exit(1)
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(data)
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    return json.loads(data) if status == 0 and data else None


class _Lambda:
    """A module around one function (built lazily: torch is imported in main)."""

    def __new__(cls, function):
        import torch

        class Wrapped(torch.nn.Module):
            def forward(self, *tensors):
                return function(*tensors)

        return Wrapped().eval()


if __name__ == "__main__":
    main()
