"""Static-shape materialisation: an op that is linear in its tensor inputs, emitted as one MatMul.

Where the node's input shapes are static and the op is linear (or affine) in its floating-point
tensor inputs -- antialiased resize, adaptive pooling with sizes that do not divide, col2im/fold,
trace, diagonals, ... -- it computes ``y = x W + b`` for a constant matrix ``W`` and bias ``b``.
Both are found by running the torch op itself on a basis (each input element set to one in
turn) and on zeros, so the numbers are torch's own arithmetic, exact to float rounding, and the
result is a plain MatMul that ONNX Runtime always runs. Leading dimensions the op treats one
slice at a time (batch, channels) stay out of the matrix, which keeps it small. Linearity is
checked on random inputs (ordinary and large) before anything is emitted. Shapes are baked in:
the fix is shape-specialised.

Self-contained (torch only): Fixport's fix script carries this file as it is.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fixport.core.project.template_form import DEFAULT_PARAMS_LINE, fix_decorator

MATERIALISED_FAMILY = "static_materialisation"
MAX_MATRIX_ELEMENTS = 1 << 22  # 16 MiB of float32 weights: past this a matrix is the wrong fix
MAX_BASIS_SIZE = 1 << 15  # input elements per slice: one op run each when torch cannot batch them
LINEARITY_SCALES = (1.0, 1e3)  # random inputs of both sizes must follow the matrix (catches clamps)
LINEARITY_RTOL = 1e-4

Run = Callable[[Sequence[torch.Tensor]], Any]


class MaterialiseError(RuntimeError):
    """The op is not linear in its inputs here, or its matrix would be too large."""


@dataclass
class LinearMap:
    """``output = concat(inputs, each flattened per slice) @ matrix + bias``, slice by slice."""

    batch_dims: int  # leading dimensions handled one slice at a time
    matrix: torch.Tensor  # (sum of the inputs' slice sizes, output slice size), float64
    bias: torch.Tensor | None  # (output slice size,), None when zero
    output_shape: tuple[int, ...]
    output_dtype: torch.dtype
    input_sizes: tuple[int, ...]  # elements per slice of each input

    def apply(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        batch = math.prod(self.output_shape[:self.batch_dims])
        flat = torch.cat([x.reshape(batch, size).double() for x, size in zip(inputs, self.input_sizes)], dim=1)
        result = flat @ self.matrix + (self.bias if self.bias is not None else 0)
        return result.reshape(self.output_shape)


def _single_output(value: Any) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise MaterialiseError("the op has several outputs")
    if not value.dtype.is_floating_point:
        raise MaterialiseError(f"the op's output is {value.dtype}, not a real floating-point tensor")
    return value


def _shared_leading_dims(inputs: Sequence[torch.Tensor], output: torch.Tensor) -> int:
    count = 0
    while all(x.dim() > count for x in inputs) and output.dim() > count \
            and len({x.shape[count] for x in inputs} | {output.shape[count]}) == 1:
        count += 1
    return count


def _columns(run: Run, slices: Sequence[torch.Tensor], bias: torch.Tensor) -> torch.Tensor:
    """The op's output slice for each basis vector of the concatenated input slices, minus the bias."""
    sizes = [s.numel() for s in slices]
    basis = torch.eye(sum(sizes), dtype=slices[0].dtype)
    parts = [chunk.reshape(-1, *s.shape) for chunk, s in zip(basis.split(sizes, dim=1), slices)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # vmap's slow-path warning for ops without batching rules
            outputs = torch.vmap(lambda *xs: run(xs))(*parts)
        return outputs.reshape(len(basis), -1).double() - bias
    except Exception:  # noqa: BLE001 -- an op vmap cannot batch: one run per basis vector
        return torch.stack([run([p[i] for p in parts]).reshape(-1).double() - bias for i in range(len(basis))])


def _follows(linear: LinearMap, run: Run, examples: Sequence[torch.Tensor]) -> bool:
    generator = torch.Generator().manual_seed(0)
    for scale in LINEARITY_SCALES:
        inputs = [torch.randn(x.shape, generator=generator, dtype=x.dtype) * scale for x in examples]
        expected = _single_output(run(inputs)).double()
        if expected.shape != linear.output_shape or not torch.isfinite(expected).all():
            return False
        if expected.numel() == 0:
            continue
        error = (linear.apply(inputs) - expected).abs().max().item()
        if error > LINEARITY_RTOL * (1.0 + expected.abs().max().item()):
            return False
    return True


def _precise(examples: Sequence[torch.Tensor], run: Run) -> list[torch.Tensor]:
    """The examples in float64 when the op runs there (the matrix is then exact), else as they are."""
    doubles = [x.double() for x in examples]
    try:
        run(doubles)
    except Exception:  # noqa: BLE001 -- ops without a float64 kernel
        return list(examples)
    return doubles


def find_linear_map(run: Run, examples: Sequence[torch.Tensor]) -> LinearMap:
    """The matrix and bias of ``run`` at the examples' shapes, with as many leading slice dimensions
    as the op allows; MaterialiseError when it is not linear or too large."""
    if not examples or any(not x.dtype.is_floating_point for x in examples):
        raise MaterialiseError("every tensor input must be real floating point (integer inputs are not linear)")
    output = _single_output(run(examples))
    precise = _precise(examples, run)
    for batch_dims in range(_shared_leading_dims(examples, output), -1, -1):
        slices = [torch.zeros((1,) * batch_dims + tuple(x.shape[batch_dims:]), dtype=x.dtype) for x in precise]
        size_in = sum(s.numel() for s in slices)
        size_out = math.prod(output.shape[batch_dims:])
        if size_in > MAX_BASIS_SIZE or size_in * size_out > MAX_MATRIX_ELEMENTS:
            break  # fewer slice dimensions only make it larger
        with torch.no_grad():
            bias = run(slices).reshape(-1).double()
            matrix = _columns(run, slices, bias)
        if not torch.isfinite(matrix).all() or not torch.isfinite(bias).all():
            continue
        linear = LinearMap(batch_dims, matrix, bias if bias.any() else None, tuple(output.shape), output.dtype,
                           tuple(s.numel() for s in slices))
        with torch.no_grad():
            if _follows(linear, run, examples):
                return linear
    raise MaterialiseError("the op is not linear in its inputs at these shapes, or its matrix would exceed "
                           f"{MAX_MATRIX_ELEMENTS} elements")


def emit_linear_map(g, values: Sequence[Any], linear: LinearMap) -> Any:
    """``linear`` applied to graph ``values``: Reshape, Concat, MatMul, Add, Reshape."""
    from torch.onnx._internal.torchscript_exporter import _type_utils

    onnx_type = _type_utils.JitScalarType.from_dtype(linear.output_dtype).onnx_type()
    batch = math.prod(linear.output_shape[:linear.batch_dims])

    def constant(tensor: torch.Tensor) -> Any:
        return g.op("Constant", value_t=tensor)

    if batch == 0 or not any(linear.input_sizes):  # nothing to multiply (the exporter's Reshape
        # shape inference divides by zero on empty tensors): the output is the bias, broadcast
        bias = linear.bias if linear.bias is not None else torch.zeros(linear.matrix.shape[1], dtype=torch.float64)
        bias = bias.reshape(linear.output_shape[linear.batch_dims:])
        return constant(bias.to(linear.output_dtype).expand(linear.output_shape).contiguous())
    flat = [g.op("Reshape", g.op("Cast", value, to_i=onnx_type), constant(torch.tensor([batch, size])))
            for value, size in zip(values, linear.input_sizes) if size]
    joined = flat[0] if len(flat) == 1 else g.op("Concat", *flat, axis_i=1)
    result = g.op("MatMul", joined, constant(linear.matrix.to(linear.output_dtype)))
    if linear.bias is not None:
        result = g.op("Add", result, constant(linear.bias.to(linear.output_dtype)))
    return g.op("Reshape", result, constant(torch.tensor(linear.output_shape, dtype=torch.int64)))


def emit_materialised(g, call) -> Any:
    """Emit the node described by ``call`` (a replay ``NodeCall``) as its linear map."""
    linear = find_linear_map(call.run, call.example_tensors())
    return emit_linear_map(g, call.tensor_values, linear)


def materialised_call(target: Any, args: tuple, kwargs: dict) -> torch.Tensor:
    """``target(*args, **kwargs)`` as its linear map: for a decomposition that torch.export runs on
    fake tensors of static shapes. The matrix is computed on real tensors of those shapes, out of
    the tracing modes, and enters the program as a constant."""
    from torch.utils._python_dispatch import _disable_current_modes

    slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    tensors = [args[i] for i in slots]
    if any(not isinstance(size, int) for t in tensors for size in t.shape):
        raise MaterialiseError("the node's shapes are dynamic: a matrix holds only for static shapes")

    def run(values: Sequence[torch.Tensor]) -> Any:
        called = list(args)
        for slot, value in zip(slots, values):
            called[slot] = value
        return target(*called, **kwargs)

    with _disable_current_modes():  # real tensors: the matrix is torch's own arithmetic
        examples = [torch.zeros(t.shape, dtype=t.dtype) for t in tensors]
        linear = find_linear_map(run, examples)
        matrix = linear.matrix.to(linear.output_dtype).clone()
        bias = None if linear.bias is None else linear.bias.to(linear.output_dtype).clone()
    batch = math.prod(linear.output_shape[:linear.batch_dims])
    if batch == 0 or not any(linear.input_sizes):
        constant = bias if bias is not None else torch.zeros(matrix.shape[1], dtype=linear.output_dtype)
        return constant.reshape(linear.output_shape[linear.batch_dims:]).expand(linear.output_shape).clone()
    # a 0-d input is unsqueezed, not reshaped: onnxscript's Reshape-MatMul rewrite reads its rank as 2
    flat = [t.to(linear.output_dtype).reshape(batch, size) if t.dim() else t.to(linear.output_dtype)[None, None]
            for t, size in zip(tensors, linear.input_sizes) if size]
    result = (flat[0] if len(flat) == 1 else torch.cat(flat, dim=1)) @ matrix
    if bias is not None:
        result = result + bias
    return result.reshape(linear.output_shape)


def materialised_decomposition_template(kind: str) -> str:
    """Dynamo template source replacing ``kind`` by its linear map at the node's static shapes."""
    name = kind.partition("::")[2]
    marked = fix_decorator({
        **_materialised_meta(kind, name), "description": f"Run {kind} on a basis at the node's shapes and replace "
                                                         "it by its matrix.",
        "family": "dynamo_decomposition", "min_opset": 18,
        "params": {"kind": {"type": "str", "default": kind, "label": "Op (namespace::name.overload)"}}},
        only="dynamo", why="a decomposition run on the program torch.export captured")
    return f'''"""{kind} as a constant matrix: static-shape materialisation (generated by Fixport).

Shape-specialised: when torch.export decomposes the program, the op is run by torch on a basis
of inputs of the node's static shapes; where it is linear in its tensor inputs (checked on random
inputs first) it is replaced by reshape -> matmul with that constant matrix (+ its value at zero)
-> reshape. Exact to float rounding, but only for these shapes: re-export for others.
"""
import torch

from fixport.symbolics.api import default_params, fix
from fixport.symbolics.synthesis.materialise import materialised_call


def op_overload(kind):
    namespace, _, rest = kind.partition("::")
    name, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")


{marked}def symbolic(*args, **kwargs):
    return materialised_call(op_overload(params["kind"]), args, kwargs)


{DEFAULT_PARAMS_LINE}'''


def _materialised_meta(kind: str, name: str) -> dict:
    return {"id": f"synthesized.materialised.{name}", "title": f"{name} as a constant matrix (static shapes)",
            "fits": [kind], "shape_specialised": True,
            "notes": "Shape-specialised: the matrix is computed for the node's input shapes."}


def materialised_template(kind: str, input_types: str = "") -> str | None:
    """Template source emitting ``kind`` as its linear map at the node's shapes (aten ops only)."""
    if not kind.startswith("aten::"):
        return None
    name = kind.partition("::")[2]
    types = f"\nFor the inputs of this node: {input_types}." if input_types else ""
    marked = fix_decorator({
        **_materialised_meta(kind, name), "description": f"Run {kind} on a basis at the node's shapes and emit its "
                                                         "matrix as one MatMul.",
        "family": MATERIALISED_FAMILY, "min_opset": 9}, only="torchscript", why="a g.op symbolic emitting the MatMul")
    return f'''"""{kind} as a constant matrix: static-shape materialisation (generated by Fixport).

Shape-specialised: at export time the op is run by torch on a basis of inputs of the node's
static shapes; where it is linear in its tensor inputs (checked on random inputs first) it is
emitted as Reshape -> MatMul with that constant matrix (+ Add of its value at zero) -> Reshape.
Exact to float rounding and runs in any ONNX runtime, but only for these shapes: re-export for
others. Leading dimensions the op treats one slice at a time stay out of the matrix.{types}
"""
from fixport.symbolics.api import fix
from fixport.symbolics.synthesis.materialise import emit_materialised
from fixport.symbolics.synthesis.replay import node_call


{marked}def symbolic(g, *args):
    # node_call: the node's ATen op with its constant arguments; the matrix comes from running it.
    return emit_materialised(g, node_call(g, args))
'''
