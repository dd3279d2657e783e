"""Statistics of torch-vs-ONNX differences, in plain numpy (no torch, no ORT).

``flatten_outputs`` names every tensor of a nested output (``out[0]``, ``out["logits"]``,
``out[1][2]``); ``compare_arrays`` measures one pair and keeps what the GUI plots: a
log-spaced histogram of |diff| and a deterministic subsample of value pairs. How outputs are
flattened and a pair's differences measured is the fix script's support's
(``core/foundation/comparison.py``): the script and Fixport share one rule.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fixport.core.foundation.comparison import (
    as_real_layout,
    difference_metrics,
)

__all__ = [
    "HISTOGRAM_BINS",
    "NOT_MEASURED",
    "SCATTER_MAX_POINTS",
    "SCATTER_SEED",
    "SMALLEST_HISTOGRAM_EDGE",
    "ErrorHistogram",
    "OutputStats",
    "ValuePairs",
    "compare_arrays",
    "compare_output_lists",
    "error_histogram",
    "json_number",
    "largest_magnitude",
    "missing_output",
    "value_pairs",
    "worst_abs",
    "worst_of_runs",
]

HISTOGRAM_BINS = 40
SMALLEST_HISTOGRAM_EDGE = 1e-12  # differences below this land in the "exactly equal" count
SCATTER_MAX_POINTS = 5_000
SCATTER_SEED = 0  # fixed: the same tensors always give the same plot
NOT_MEASURED = "—"  # shown for a statistic of an output nothing was compared for


@dataclass
class ErrorHistogram:
    """Counts of |diff| in log-spaced bins; ``zero_count`` holds differences below the first edge."""

    edges: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    zero_count: int = 0
    nonfinite_count: int = 0


@dataclass
class ValuePairs:
    """Torch and ONNX values at the same (subsampled) flat positions, for a scatter plot."""

    torch_values: list[float] = field(default_factory=list)
    onnx_values: list[float] = field(default_factory=list)
    total_elements: int = 0


@dataclass
class OutputStats:
    """How far one ONNX output is from torch's; ``passed`` applies the dtype's tolerance."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    onnx_shape: tuple[int, ...]
    onnx_dtype: str
    rtol: float
    atol: float
    max_abs: float = math.nan
    mean_abs: float = math.nan
    max_rel: float = math.nan
    rmse: float = math.nan
    cosine: float = math.nan
    mismatch_count: int = 0
    element_count: int = 0
    passed: bool = False
    problem: str = ""  # shape or dtype mismatch, missing output
    run: int = 0  # which input set these numbers come from
    # False where ONNX Runtime gave no value for this output (it failed on the input set, or the
    # model has no output there): ``problem`` says why, and there are no numbers to show.
    produced: bool = True
    # False where no element was compared (not produced, or a shape of another size): the NaN
    # statistics and the mismatch count then only say that, and are not shown as measurements.
    compared: bool = True
    # Set where the output passes only once tied elements are put back in torch's order (the
    # numbers are then those of the reordered output): the sentence saying so (tied_order.py).
    tied_order: str = ""
    histogram: ErrorHistogram = field(default_factory=ErrorHistogram)
    scatter: ValuePairs = field(default_factory=ValuePairs)

    @property
    def mismatch_fraction(self) -> float:
        return self.mismatch_count / self.element_count if self.element_count else (0.0 if self.passed else 1.0)

    def to_json(self) -> dict[str, Any]:
        """The row of `compare --json`; where nothing was compared, the statistics are null, never NaN."""
        measured = {
            "max_abs": json_number(self.max_abs), "mean_abs": json_number(self.mean_abs),
            "max_rel": json_number(self.max_rel), "rmse": json_number(self.rmse),
            "cosine": json_number(self.cosine), "mismatch_count": self.mismatch_count,
            "mismatch_fraction": json_number(self.mismatch_fraction),
        }
        return {
            "name": self.name, "shape": list(self.shape), "dtype": self.dtype,
            **(measured if self.compared else dict.fromkeys(measured)), "rtol": self.rtol,
            "atol": self.atol, "pass": self.passed, "problem": self.problem, "worst_run": self.run,
            "produced": self.produced, "compared": self.compared, "tied_order": self.tied_order,
        }


def json_number(value: float) -> float | str:
    """JSON has no inf/nan: spell them as strings so every parser reads the output."""
    return float(value) if math.isfinite(value) else str(value)


def error_histogram(abs_diff: np.ndarray, bins: int = HISTOGRAM_BINS) -> ErrorHistogram:
    """Log-spaced bins from the smallest non-zero |diff| (at least 1e-12) to the largest."""
    flat = abs_diff.ravel()
    finite = flat[np.isfinite(flat)]
    nonzero = finite[finite >= SMALLEST_HISTOGRAM_EDGE]
    histogram = ErrorHistogram(zero_count=int(finite.size - nonzero.size),
                               nonfinite_count=int(flat.size - finite.size))
    if nonzero.size == 0:
        return histogram
    low, high = float(nonzero.min()), float(nonzero.max())
    if high <= low:
        high = low * 10
    edges = np.logspace(math.log10(low), math.log10(high), bins + 1)
    edges[0], edges[-1] = low, high  # exact ends: rounding in logspace must not drop the extremes
    counts, edges = np.histogram(nonzero, bins=edges)
    histogram.edges = [float(e) for e in edges]
    histogram.counts = [int(c) for c in counts]
    return histogram


def value_pairs(expected: np.ndarray, actual: np.ndarray, max_points: int = SCATTER_MAX_POINTS) -> ValuePairs:
    """All pairs for small tensors; a fixed-seed sample of ``max_points`` positions for big ones."""
    flat_expected, flat_actual = expected.ravel(), actual.ravel()
    total = flat_expected.size
    if total > max_points:
        positions = np.sort(np.random.default_rng(SCATTER_SEED).choice(total, max_points, replace=False))
        flat_expected, flat_actual = flat_expected[positions], flat_actual[positions]
    return ValuePairs(flat_expected.astype(np.float64).tolist(), flat_actual.astype(np.float64).tolist(), total)


def compare_arrays(name: str, expected: np.ndarray, actual: np.ndarray, rtol: float, atol: float,
                   run: int = 0, keep_plot_data: bool = True) -> OutputStats:
    """Compare one torch output (``expected``) with its ONNX counterpart (``actual``)."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    stats = OutputStats(name=name, shape=tuple(expected.shape), dtype=str(expected.dtype),
                        onnx_shape=tuple(actual.shape), onnx_dtype=str(actual.dtype), rtol=rtol, atol=atol,
                        run=run, element_count=int(expected.size))
    if expected.shape != actual.shape:
        if expected.size != actual.size:
            stats.problem = f"shape differs: torch {list(expected.shape)}, ONNX {list(actual.shape)}"
            stats.mismatch_count = stats.element_count
            stats.compared = False
            return stats
        stats.problem = f"shape differs: torch {list(expected.shape)}, ONNX {list(actual.shape)} (same size)"
        actual = actual.reshape(expected.shape)
    if expected.dtype != actual.dtype:
        stats.problem = f"dtype differs: torch {expected.dtype}, ONNX {actual.dtype}"
    metrics = difference_metrics(expected, actual, rtol, atol)
    abs_diff = metrics.pop("abs_diff")
    for key, value in metrics.items():
        setattr(stats, key, value)
    stats.passed = not stats.problem and stats.mismatch_count == 0
    if keep_plot_data:
        stats.histogram = error_histogram(abs_diff)
        stats.scatter = value_pairs(np.real(expected), np.real(actual))
    return stats


def missing_output(name: str, expected: np.ndarray, rtol: float, atol: float, run: int, why: str, *,
                   produced: bool = False) -> OutputStats:
    """A torch output ONNX Runtime did not produce (``why``), or with ``produced`` an ONNX output
    torch does not return: always a failure, with nothing compared."""
    return OutputStats(name=name, shape=tuple(expected.shape), dtype=str(expected.dtype), onnx_shape=(),
                       onnx_dtype="", rtol=rtol, atol=atol, problem=why, run=run,
                       element_count=int(expected.size), mismatch_count=int(expected.size),
                       produced=produced, compared=False)


def largest_magnitude(values: np.ndarray) -> float:
    """The largest absolute finite value (0 for an empty or non-numeric array)."""
    values = np.asarray(values)
    if values.size == 0 or values.dtype.kind not in "fciu":
        return 0.0
    with np.errstate(invalid="ignore"):
        finite = np.abs(values[np.isfinite(values)]) if values.dtype.kind in "fc" else np.abs(values)
    return float(finite.max()) if finite.size else 0.0


def compare_output_lists(expected: list[tuple[str, np.ndarray]], actual: Sequence[Any], tolerances: Any,
                         run: int = 0, keep_plot_data: bool = True) -> list[OutputStats]:
    """The one comparison rule: each torch output (``expected``, name and array) against the ONNX
    output at its position, held to ``tolerances.for_dtype`` (a ToleranceTable); an output that
    only one side has is a failure."""
    stats: list[OutputStats] = []
    for index, (name, reference) in enumerate(expected):
        rtol, atol = tolerances.for_values(str(reference.dtype), largest_magnitude(reference))
        if index < len(actual):
            onnx_value = np.asarray(actual[index])
            reference = as_real_layout(reference, onnx_value)
            stats.append(compare_arrays(name, reference, onnx_value, rtol, atol, run, keep_plot_data))
        else:
            stats.append(missing_output(name, reference, rtol, atol, run, "ONNX has no output at this position"))
    for extra in actual[len(expected):]:
        stats.append(missing_output(f"onnx_only[{len(stats)}]", np.asarray(extra), 0.0, 0.0, run,
                                    "ONNX has an output torch does not return", produced=True))
    _pass_tied_orders(stats, expected, actual, tolerances, run, keep_plot_data)
    return stats


def _pass_tied_orders(stats: list[OutputStats], expected: list[tuple[str, np.ndarray]], actual: Sequence[Any],
                      tolerances: Any, run: int, keep_plot_data: bool) -> None:
    """Each failing output that matches torch up to the order of tied elements passes, measured in
    torch's order, with the sentence saying so: a tie is not a mismatch (tied_order.py)."""
    from fixport.core.statistics.tied_order import find_tied_order

    def tolerance_for(values: np.ndarray) -> tuple[float, float]:
        return tolerances.for_values(str(values.dtype), largest_magnitude(values))

    for index, output in enumerate(stats[:min(len(expected), len(actual))]):
        if output.passed or output.problem:
            continue
        tied = find_tied_order(index, expected, [np.asarray(value) for value in actual], tolerance_for)
        if tied is None:
            continue
        reordered = compare_arrays(output.name, expected[index][1], tied.reordered, output.rtol, output.atol, run,
                                   keep_plot_data)
        if reordered.passed:
            stats[index] = replace(reordered, tied_order=tied.sentence())


def worst_abs(stats: Iterable[OutputStats]) -> float:
    """The largest absolute difference over ``stats`` (NaN differences skipped)."""
    return max((s.max_abs for s in stats if s.max_abs == s.max_abs), default=0.0)


def worst_of_runs(per_run: Iterable[OutputStats]) -> OutputStats:
    """One output over several input sets: the worst run's numbers and plots, mismatches summed."""
    runs = list(per_run)
    if not runs:
        raise ValueError("worst_of_runs needs at least one run")

    def badness(stats: OutputStats) -> tuple[bool, float]:
        value = stats.max_abs if not math.isnan(stats.max_abs) else math.inf
        return (not stats.passed, value)

    worst = max(runs, key=badness)
    return replace(worst, mismatch_count=sum(s.mismatch_count for s in runs),
                   element_count=sum(s.element_count for s in runs),
                   passed=all(s.passed for s in runs),
                   cosine=min((s.cosine for s in runs), key=lambda c: c if not math.isnan(c) else -math.inf),
                   max_rel=max(s.max_rel for s in runs) if all(not math.isnan(s.max_rel) for s in runs)
                   else worst.max_rel)
