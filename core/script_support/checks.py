"""How the fix script compares ONNX Runtime with torch, by Fixport's rules: outputs flattened and
compared with the per-dtype tolerance table, half-precision rounding judged against a float32 run,
and the other sizes of the declared dynamic axes."""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

Tolerance = tuple[float, float]  # (rtol, atol)

DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-3, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "complex128": (1e-7, 1e-9),
    "complex64": (1e-3, 1e-5),
    "int64": (0.0, 0.0),
    "int32": (0.0, 0.0),
    "int16": (0.0, 0.0),
    "int8": (0.0, 0.0),
    "uint8": (0.0, 0.0),
    "bool": (0.0, 0.0),
}
FALLBACK_DTYPE = "float32"


def to_numpy(value: Any) -> np.ndarray:
    """A numpy array from a numpy value or a torch tensor (duck-typed: no torch import)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        value = value.resolve_conj().resolve_neg()  # FFT and conj() results may be lazy views numpy refuses
        if str(value.dtype) == "torch.bfloat16":  # numpy has none: ml_dtypes' (as onnx's numpy_helper)
            import ml_dtypes

            return value.float().numpy().astype(ml_dtypes.bfloat16)
        return value.numpy()
    return np.asarray(value)


def flatten_outputs(value: Any, prefix: str = "out") -> list[tuple[str, np.ndarray]]:
    """Every tensor of a nested tuple/list/dict output, in the exporter's (flattening) order."""
    if isinstance(value, dict):
        items: list[tuple[str, np.ndarray]] = []
        for key, item in value.items():
            items += flatten_outputs(item, f"{prefix}[{key!r}]".replace("'", '"'))
        return items
    if isinstance(value, (list, tuple)):
        items = []
        for index, item in enumerate(value):
            items += flatten_outputs(item, f"{prefix}[{index}]")
        return items
    if value is None:
        return []
    return [(prefix, to_numpy(value))]


def _as_float(array: np.ndarray) -> np.ndarray:
    if np.iscomplexobj(array):
        return array.astype(np.complex128)
    return array.astype(np.float64)


def _epsilon(dtype: np.dtype) -> float:
    """The float type's machine epsilon (bfloat16's from ml_dtypes), 1.0 for integers and bools."""
    if np.issubdtype(dtype, np.inexact):
        return float(np.finfo(dtype).eps)
    if dtype.name == "bfloat16":
        import ml_dtypes

        return float(ml_dtypes.finfo(dtype).eps)
    return 1.0


def cosine_similarity(reference: np.ndarray, candidate: np.ndarray) -> float:
    """1.0 for two zero tensors, 0.0 when only one is zero, nan when either holds nan/inf."""
    a, b = np.real(reference).ravel(), np.real(candidate).ravel()
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return math.nan
    norm_a, norm_b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if norm_a == 0.0 and norm_b == 0.0:
        return 1.0
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0
    return float(np.dot(a, b) / (norm_a * norm_b))


def difference_metrics(expected: np.ndarray, actual: np.ndarray, rtol: float, atol: float) -> dict[str, Any]:
    """max/mean abs, max rel, RMSE, cosine and allclose mismatches of two same-shape arrays.

    Outputs holding inf or nan are compared on purpose: an equal pair (nan with nan, an inf with
    the same inf) differs by 0, any other pair with a nan or an inf by inf. numpy's warnings on the
    way there (inf - inf, a square that overflows) say nothing the numbers do not."""
    reference, candidate = _as_float(expected), _as_float(actual)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        equal = (np.isnan(reference) & np.isnan(candidate)) | (reference == candidate)
        abs_diff = np.where(equal, 0.0, np.abs(candidate - reference))
        abs_diff = np.where(np.isnan(abs_diff), np.inf, abs_diff)
        magnitude = np.abs(reference)
        close = ((abs_diff <= atol + rtol * magnitude) & np.isfinite(abs_diff)) | equal  # inf is not near -inf
        count = int(abs_diff.size)
        metrics: dict[str, Any] = {"abs_diff": abs_diff, "mismatch_count": int(count - np.count_nonzero(close)),
                                   "element_count": count}
        if count == 0:
            metrics.update(max_abs=0.0, mean_abs=0.0, max_rel=0.0, rmse=0.0, cosine=1.0)
            return metrics
        floor = _epsilon(expected.dtype)
        relative = np.where(np.isinf(abs_diff), np.inf,  # +inf against -inf: inf, not inf / inf
                            abs_diff / np.maximum(np.where(np.isnan(magnitude), 0.0, magnitude), floor))
        metrics.update(max_abs=float(abs_diff.max()), mean_abs=float(abs_diff.mean()),
                       max_rel=float(relative.max()), rmse=float(np.sqrt(np.mean(np.square(abs_diff)))),
                       cosine=cosine_similarity(reference, candidate))
    return metrics


def as_real_layout(reference: np.ndarray, onnx_value: np.ndarray) -> np.ndarray:
    """A complex torch output as ONNX writes it (ONNX has no complex tensors: the dynamo exporter
    gives a real one with a trailing (real, imag) axis); any other output as it is."""
    if np.iscomplexobj(reference) and not np.iscomplexobj(onnx_value) \
            and onnx_value.shape == (*reference.shape, 2):
        return np.stack([reference.real, reference.imag], axis=-1)
    return reference


def declared_dims(dynamic_axes: dict | None, input_names: list[str], input_shapes: list[tuple[int, ...]]
                  ) -> dict[str, list[tuple[int, int]]]:
    """Dim name -> the (input position, axis) it names, for every dynamic axis declared on an input
    (by shapes, no torch: the fix script carries it by source)."""
    dims: dict[str, list[tuple[int, int]]] = {}
    for input_name, axes in (dynamic_axes or {}).items():
        if input_name not in input_names:
            continue  # an output's dynamic axes: nothing to feed
        position = list(input_names).index(input_name)
        if position >= len(input_shapes):
            continue
        named = axes.items() if isinstance(axes, dict) else ((axis, f"{input_name}_dim{axis}") for axis in axes)
        for axis, dim_name in named:
            axis = int(axis) % max(len(input_shapes[position]), 1)
            dims.setdefault(str(dim_name), []).append((position, axis))
    return dims


LOW_PRECISION = (torch.float16, torch.bfloat16)
LOW_PRECISION_NAMES = ("float16", "bfloat16")
ROUNDING_MARGIN = 2.0  # ONNX Runtime may be this many times further from float32 than torch is


def float32_outputs(module: torch.nn.Module, inputs: Sequence[Any]) -> list[tuple[str, np.ndarray]] | None:
    """The model's outputs with its float16/bfloat16 weights and inputs widened to float32 (in
    place, then narrowed back: exact both ways); None when the model does not run that way."""
    narrow = [(tensor, tensor.dtype) for tensor in itertools.chain(module.parameters(), module.buffers())
              if tensor.dtype in LOW_PRECISION]
    widened = [t.float() if isinstance(t, torch.Tensor) and t.dtype in LOW_PRECISION else t for t in inputs]
    try:
        for tensor, _ in narrow:
            tensor.data = tensor.data.float()
        with torch.no_grad():
            return flatten_outputs(module(*widened))
    except Exception:  # a model that casts to its own dtype and then refuses float32: no verdict
        return None
    finally:
        for tensor, dtype in narrow:
            tensor.data = tensor.data.to(dtype)


def _max_abs(values: np.ndarray, exact: np.ndarray) -> float:
    if values.shape != exact.shape:
        return float("inf")
    difference = np.abs(values.astype(np.float64) - exact)
    return float(np.nanmax(difference)) if difference.size else 0.0


def within_rounding(torch_value: np.ndarray, onnx_value: np.ndarray, float32_value: np.ndarray,
                    atol: float) -> tuple[bool, float, float]:
    """Whether ONNX Runtime's half-precision output is no further from the float32 run than
    ROUNDING_MARGIN times torch's own (or than ``atol``); with both distances (ONNX Runtime's, torch's)."""
    exact = np.asarray(float32_value).astype(np.float64)
    torch_error = _max_abs(np.asarray(torch_value), exact)
    onnx_error = _max_abs(np.asarray(onnx_value), exact)
    return onnx_error <= max(ROUNDING_MARGIN * torch_error, atol), onnx_error, torch_error


SHAPE_SEED = 7  # the other shapes' random inputs, the same on every run


def _larger(size: int) -> int:
    return size + max(1, (size + 1) // 2)  # 1 -> 2 (batch above 1), 8 -> 12, 30 -> 45


def _smaller(size: int) -> int:
    if size <= 2:
        return 1  # batch 1
    smaller = size * 3 // 4
    return max(1, smaller - 1 if smaller % 2 == 0 else smaller)  # odd: 8 -> 5, 30 -> 21


def random_like(tensor: torch.Tensor, shape: list[int] | torch.Size, generator: torch.Generator) -> torch.Tensor:
    """Random values like ``tensor``'s at ``shape``: normal for floating and complex dtypes, ints
    within the tensor's own range (so token ids stay valid)."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        return torch.randn(shape, generator=generator, dtype=tensor.dtype)
    if tensor.dtype == torch.bool:
        return torch.rand(shape, generator=generator) < 0.5
    if tensor.numel() == 0:
        return torch.zeros(shape, dtype=tensor.dtype)
    low, high = int(tensor.min()), int(tensor.max())
    return torch.randint(low, high + 1, shape, generator=generator, dtype=tensor.dtype)


def other_size_inputs(dims: dict[str, list[tuple[int, int]]], example_inputs: tuple[torch.Tensor, ...]
                      ) -> list[tuple[str, tuple[torch.Tensor, ...]]]:
    """(label, inputs) at a larger and at a smaller size of every dim in ``dims`` (``declared_dims``),
    the other sizes as traced; torch only, so the fix script carries it."""
    if not dims:
        return []
    traced = {name: int(example_inputs[places[0][0]].shape[places[0][1]]) for name, places in dims.items()}
    sets = []
    for resize in (_larger, _smaller):
        sizes = {name: resize(size) for name, size in traced.items()}
        # "past_plus_1" stays one more than "past" (a mask over the past and the new token)
        for name, size in traced.items():
            base, _, offset = name.rpartition("_plus_")
            if base in sizes and offset.isdigit() and traced[base] + int(offset) == size:
                sizes[name] = sizes[base] + int(offset)
        if sizes == traced:
            continue
        shapes = [list(t.shape) for t in example_inputs]
        for name, places in dims.items():
            for position, axis in places:
                shapes[position][axis] = sizes[name]
        generator = torch.Generator().manual_seed(SHAPE_SEED)
        inputs = tuple(random_like(t, shape, generator) for t, shape in zip(example_inputs, shapes))
        sets.append((", ".join(f"{name}={size}" for name, size in sizes.items()), inputs))
    return sets


def feeds_for(session: ort.InferenceSession, names: Sequence[str],
              arrays: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Map arrays to the session's inputs by name, else by position."""
    wanted = [i.name for i in session.get_inputs()]
    by_name = dict(zip(names, arrays))
    if all(name in by_name for name in wanted):
        return {name: by_name[name] for name in wanted}
    return dict(zip(wanted, arrays))
