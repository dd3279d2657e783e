"""Fixport's comparison rules in plain numpy (no torch, no ONNX Runtime): the per-dtype tolerance
table, outputs flattened in the exporter's order, and the differences measured. The engine's
comparison (``core/statistics/output_stats.py``, ``tolerances.py``) is built on these."""
from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

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
# A dtype missing from the table (a new float format, say) is held to float32's tolerance.
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
    children = _pytree_children(value)
    if children is not None:
        return [item for index, child in enumerate(children) for item in flatten_outputs(child, f"{prefix}[{index}]")]
    return [(prefix, to_numpy(value))]


def _pytree_children(value: Any) -> list[Any] | None:
    """The children of an object torch's pytree takes apart (a transformers cache returned by
    forward(), once registered), as torch.export flattens it; None for anything else. torch is
    looked up, not imported: an output that is a torch object means torch is loaded."""
    pytree = sys.modules.get("torch.utils._pytree")
    if pytree is None or hasattr(value, "detach") or isinstance(value, (np.ndarray, np.generic)):
        return None
    node = pytree.SUPPORTED_NODES.get(type(value))
    return list(node.flatten_fn(value)[0]) if node is not None else None


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
