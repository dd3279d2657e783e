"""Output statistics, flattening, plot data and the tolerance table: numpy only, no torch."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fixport.core.foundation.comparison import DEFAULT_TOLERANCES, cosine_similarity, flatten_outputs
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.statistics.output_stats import (
    SCATTER_MAX_POINTS,
    compare_arrays,
    error_histogram,
    value_pairs,
    worst_of_runs,
)


def test_identical_arrays_pass_with_zero_error() -> None:
    a = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    stats = compare_arrays("out", a, a.copy(), 1e-3, 1e-5)
    assert stats.passed and stats.max_abs == 0 and stats.mismatch_count == 0
    assert stats.cosine == pytest.approx(1.0) and stats.histogram.zero_count == a.size


def test_metrics_and_mismatch_count() -> None:
    expected = np.array([1.0, 2.0, 4.0, 0.0], dtype=np.float32)
    actual = np.array([1.0, 2.5, 4.0, 0.001], dtype=np.float32)
    stats = compare_arrays("out", expected, actual, rtol=0.0, atol=0.01)
    assert stats.max_abs == pytest.approx(0.5)
    assert stats.mean_abs == pytest.approx((0.5 + 0.001) / 4, rel=1e-4)
    assert stats.max_rel == pytest.approx(0.001 / np.finfo(np.float32).eps, rel=1e-3)  # |e| = 0 is floored
    assert stats.rmse == pytest.approx(math.sqrt((0.25 + 1e-6) / 4), rel=1e-4)
    assert stats.mismatch_count == 1 and stats.mismatch_fraction == pytest.approx(0.25)
    assert not stats.passed


def test_shape_and_dtype_problems_fail() -> None:
    a = np.zeros((2, 3), np.float32)
    assert "shape" in compare_arrays("out", a, np.zeros((3, 3), np.float32), 1e-3, 1e-5).problem
    same_size = compare_arrays("out", a, np.zeros((3, 2), np.float32), 1e-3, 1e-5)
    assert not same_size.passed and same_size.max_abs == 0
    dtype = compare_arrays("out", a, np.zeros((2, 3), np.float64), 1e-3, 1e-5)
    assert "dtype" in dtype.problem and not dtype.passed


def test_nan_handling() -> None:
    expected = np.array([np.nan, 1.0], np.float32)
    assert compare_arrays("o", expected, expected.copy(), 1e-3, 1e-5).passed
    one_sided = compare_arrays("o", expected, np.array([0.0, 1.0], np.float32), 1e-3, 1e-5)
    assert not one_sided.passed and math.isinf(one_sided.max_abs)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_inf_and_nan_are_compared_without_numpy_warnings() -> None:
    expected = np.array([np.inf, -np.inf, np.nan, 1.0, 3e38], np.float32)
    same = compare_arrays("o", expected, expected.copy(), 1e-3, 1e-5)
    assert same.passed and same.max_abs == 0 and same.max_rel == 0 and same.rmse == 0  # equal infs differ by 0
    flipped = compare_arrays("o", expected, np.array([-np.inf, -np.inf, np.nan, 1.0, -3e38], np.float32), 1e-3, 1e-5)
    assert not flipped.passed and flipped.mismatch_count == 2
    assert math.isinf(flipped.max_abs) and math.isinf(flipped.max_rel) and math.isinf(flipped.rmse)


def test_integers_compare_exactly() -> None:
    table = ToleranceTable()
    rtol, atol = table.for_dtype("int64")
    assert (rtol, atol) == (0.0, 0.0)
    stats = compare_arrays("idx", np.array([1, 2]), np.array([1, 3]), rtol, atol)
    assert stats.mismatch_count == 1


def test_tolerance_table_overrides_and_fallback() -> None:
    assert ToleranceTable().for_dtype("float32") == DEFAULT_TOLERANCES["float32"]
    assert ToleranceTable(rtol=0.5).for_dtype("float32") == (0.5, DEFAULT_TOLERANCES["float32"][1])
    assert ToleranceTable(atol=1.0).for_dtype("int64") == (0.0, 1.0)
    assert ToleranceTable().for_dtype("float8_e4m3") == DEFAULT_TOLERANCES["float32"]
    with pytest.raises(ValueError):
        ToleranceTable(rtol=-1).validate()


def test_flatten_nested_outputs_names() -> None:
    value = (np.zeros(1), {"logits": np.ones(2), "aux": [np.zeros(3), (np.ones(1), None)]})
    names = [name for name, _ in flatten_outputs(value)]
    assert names == ['out[0]', 'out[1]["logits"]', 'out[1]["aux"][0]', 'out[1]["aux"][1][0]']
    assert [name for name, _ in flatten_outputs(np.zeros(2))] == ["out"]


def test_histogram_is_log_spaced_and_counts_everything() -> None:
    diff = np.array([0.0, 1e-8, 1e-6, 1e-4, 1e-2, np.inf])
    histogram = error_histogram(diff, bins=4)
    assert histogram.zero_count == 1 and histogram.nonfinite_count == 1
    assert sum(histogram.counts) == 4
    ratios = np.diff(np.log10(histogram.edges))
    assert np.allclose(ratios, ratios[0])


def test_scatter_is_subsampled_deterministically() -> None:
    expected = np.arange(20_000, dtype=np.float32)
    first, second = value_pairs(expected, expected + 1), value_pairs(expected, expected + 1)
    assert len(first.torch_values) == SCATTER_MAX_POINTS and first.total_elements == 20_000
    assert first.torch_values == second.torch_values
    assert all(o - t == 1 for t, o in zip(first.torch_values, first.onnx_values))
    assert len(value_pairs(expected[:10], expected[:10]).torch_values) == 10


def test_cosine_edge_cases() -> None:
    zeros = np.zeros(3)
    assert cosine_similarity(zeros, zeros) == 1.0
    assert cosine_similarity(zeros, np.ones(3)) == 0.0
    assert cosine_similarity(np.ones(3), -np.ones(3)) == pytest.approx(-1.0)


def test_worst_of_runs_keeps_the_failing_run() -> None:
    a = np.ones(4, np.float32)
    good = compare_arrays("out", a, a, 1e-3, 1e-5, run=0)
    bad = compare_arrays("out", a, a + 1, 1e-3, 1e-5, run=1)
    worst = worst_of_runs([good, bad])
    assert worst.run == 1 and not worst.passed
    assert worst.mismatch_count == 4 and worst.element_count == 8
    assert worst.mismatch_fraction == pytest.approx(0.5)
