"""Comparison tolerances as data: one table {dtype: (rtol, atol)}, overridable by the user.

An element passes when ``|onnx - torch| <= atol + rtol * |torch|`` (numpy's ``allclose``).
The defaults allow for what a correct export legitimately changes: kernels that sum in another
order, fused multiply-adds, and fast approximations of transcendental functions. Integer and
boolean outputs must match exactly.

=========  ======  ======  ====================================================
dtype      rtol    atol    why
=========  ======  ======  ====================================================
float64    1e-7    1e-9    double kernels agree to ~1e-12; margin for reductions
float32    1e-3    1e-5    ~10 ulp of float32 times deep-network accumulation
float16    1e-2    1e-3    10 bits of mantissa
bfloat16   2e-2    1e-2    7 bits of mantissa
integers   0       0       exact
bool       0       0       exact
=========  ======  ======  ====================================================

Ties are no mismatch: an output that matches torch once its slices along one axis are put back
in torch's order, where only slices with an equal sort key moved (top-k over equal scores), passes
with a note, held to the same row of the table (:mod:`fixport.core.statistics.tied_order`).

"Deployed" CUDA comparisons (TF32 on, the CUDA provider's default) replace the float32 and
complex64 rows with :data:`TF32_TOLERANCES`, and let the absolute tolerance grow with the size of the
output (:data:`TF32_SCALE_ATOL`); see :data:`TF32_REASON`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

# The default table and its fallback are the fix script's support's, so the script and Fixport hold
# outputs to the same numbers.
from fixport.core.foundation.comparison import DEFAULT_TOLERANCES, FALLBACK_DTYPE, Tolerance

__all__ = [
    "BF16_COMPUTE_REASON",
    "BF16_COMPUTE_TABLE_NAME",
    "DEFAULT_TABLE_NAME",
    "TF32_REASON",
    "TF32_SCALE_ATOL",
    "TF32_TABLE_NAME",
    "TF32_TOLERANCES",
    "ToleranceTable",
]

# ONNX Runtime's CUDA provider by default rounds MatMul/Gemm/Conv inputs to TF32 (a 10-bit
# mantissa, as float16's): float32 outputs then agree with torch only to float16's tolerance.
TF32_TABLE_NAME = "deployed CUDA (TF32)"
TF32_TOLERANCES: dict[str, Tolerance] = {"float32": DEFAULT_TOLERANCES["float16"],
                                         "complex64": DEFAULT_TOLERANCES["float16"]}
# TF32 rounds the *inputs* of each sum, so an output's error follows the size of the sums, not of the
# element: measured on an H100 (bench/cuda_check.py), ResNet-50's logits (up to 112) were off by 3.8e-2
# and RAFT's flow (up to 5.4) by 7.2e-3, 3.4e-4 and 1.3e-3 of the output's largest value, where
# near-zero elements failed rtol 1e-2. The absolute tolerance is at least this share of it (about
# 8 units of TF32's rounding, 2**-11), three times the worst measured.
TF32_SCALE_ATOL: dict[str, float] = {"float32": 4e-3, "complex64": 4e-3}
TF32_REASON = ("the CUDA provider's defaults compute MatMul, Gemm and Conv in TF32, whose inputs keep a 10-bit "
               "mantissa (float32 keeps 23), so float32 outputs are held to float16's tolerance, the same mantissa: "
               "rtol 1e-2, atol 1e-3, or 4e-3 of the output's largest value where that is more (TF32's error "
               "follows the size of the sums: ResNet-50 measured 3.4e-4 of it on an H100)")
# OpenVINO's CPU plugin by default computes float32 models in bfloat16 where the CPU has bfloat16
# instructions (its INFERENCE_PRECISION_HINT): float32 outputs then agree with torch to bfloat16's
# row only, and, as with TF32, the error follows the size of the sums. Measured on a 6-layer
# transformer encoder (d_model 64, outputs up to ~4): 1.4e-2, 3.4e-3 of the largest value; the
# share is 3e-2, about 8 units of bfloat16's rounding (2**-8), as TF32's is of its own.
BF16_COMPUTE_TABLE_NAME = "deployed OpenVINO (bf16)"
BF16_COMPUTE_TOLERANCES: dict[str, Tolerance] = {"float32": DEFAULT_TOLERANCES["bfloat16"],
                                                 "complex64": DEFAULT_TOLERANCES["bfloat16"]}
BF16_COMPUTE_SCALE_ATOL: dict[str, float] = {"float32": 3e-2, "complex64": 3e-2}
BF16_COMPUTE_REASON = ("OpenVINO's CPU default (INFERENCE_PRECISION_HINT) computes in bfloat16 on this CPU, whose "
                       "values keep a 7-bit mantissa (float32 keeps 23), so float32 outputs are held to bfloat16's "
                       "tolerance: rtol 2e-2, atol 1e-2, or 3e-2 of the output's largest value where that is more; "
                       "a difference within it is the precision mode, not the export (--precision strict sets f32)")
DEFAULT_TABLE_NAME = "default"


@dataclass
class ToleranceTable:
    """Per-dtype tolerances; ``rtol``/``atol`` (from --rtol/--atol) replace the table's values."""

    entries: dict[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    rtol: float | None = None
    atol: float | None = None
    name: str = DEFAULT_TABLE_NAME
    reason: str = ""  # why the table differs from the default one
    # dtype -> share of the output's largest value the absolute tolerance is at least (TF32's rows)
    scale_atol: dict[str, float] = field(default_factory=dict)

    def for_tf32(self) -> ToleranceTable:
        """This table with the TF32 rows (a deployed CUDA comparison); the user's overrides still win."""
        return ToleranceTable({**self.entries, **TF32_TOLERANCES}, self.rtol, self.atol, TF32_TABLE_NAME, TF32_REASON,
                              dict(TF32_SCALE_ATOL))

    def for_bfloat16_compute(self) -> ToleranceTable:
        """This table with bfloat16's rows for float32 (deployed OpenVINO); the user's overrides still win."""
        return ToleranceTable({**self.entries, **BF16_COMPUTE_TOLERANCES}, self.rtol, self.atol,
                              BF16_COMPUTE_TABLE_NAME, BF16_COMPUTE_REASON, dict(BF16_COMPUTE_SCALE_ATOL))

    def for_dtype(self, dtype: str | None) -> Tolerance:
        """(rtol, atol) for outputs of ``dtype``, with the user's overrides applied."""
        table_rtol, table_atol = self.entries.get(str(dtype), self.entries.get(FALLBACK_DTYPE, (1e-3, 1e-5)))
        rtol = table_rtol if self.rtol is None else self.rtol
        atol = table_atol if self.atol is None else self.atol
        return float(rtol), float(atol)

    def for_values(self, dtype: str | None, largest: float) -> Tolerance:
        """(rtol, atol) for an output of ``dtype`` whose largest absolute torch value is ``largest``:
        the row's, with atol raised to the row's share of ``largest`` (unless the user set atol)."""
        rtol, atol = self.for_dtype(dtype)
        share = self.scale_atol.get(str(dtype))
        if share is not None and self.atol is None and math.isfinite(largest):
            atol = max(atol, share * largest)
        return rtol, atol

    def effective(self) -> dict[str, Tolerance]:
        """The whole table as it applies now (for display and JSON)."""
        return {dtype: self.for_dtype(dtype) for dtype in self.entries}

    def validate(self) -> None:
        for name, value in (("rtol", self.rtol), ("atol", self.atol)):
            if value is not None and not value >= 0:
                raise ValueError(f"{name} must be a non-negative number, not {value!r}.")
