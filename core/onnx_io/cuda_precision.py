"""How precisely ONNX Runtime's CUDA provider computes: strict (measures the export) or as deployed.

ONNX Runtime's CUDA provider trades float32 precision for speed by default: MatMul, Gemm and
Conv run in TF32 on Ampere and newer GPUs (inputs rounded to a 10-bit mantissa). A comparison
that should measure the *export* turns every such trade off ("strict"); "deployed" keeps the
provider's defaults and is held to a tolerance that fits them (core/project/tolerances.py).
The CPU provider has no such options: the modes differ only on CUDA.
"""
from __future__ import annotations

STRICT = "strict"
DEPLOYED = "deployed"
PRECISION_MODES = (STRICT, DEPLOYED)
DEFAULT_PRECISION = STRICT

# onnxruntime-gpu 1.31's CUDA provider options that trade precision, set to the precise value.
# (cudnn_conv_algo_search, prefer_nhwc, enable_cuda_graph and the arena options change speed or
# memory only; tunable_op_enable is off by default.)
STRICT_CUDA_OPTIONS: dict[str, str] = {
    "use_tf32": "0",  # default 1: TF32 (10-bit mantissa) in MatMul, Gemm and Conv
    "enable_skip_layer_norm_strict_mode": "1",  # default 0: the fused SkipLayerNorm kernel's faster accumulation
}

PRECISION_HELP = {
    STRICT: "CUDA without precision shortcuts (use_tf32=0, strict SkipLayerNorm): measures the export",
    DEPLOYED: "CUDA with the provider's defaults (TF32 on), held to the TF32 tolerance row",
}


def check_precision(precision: str) -> str:
    """``precision`` when it is a known mode; a ValueError naming the modes otherwise."""
    if precision not in PRECISION_MODES:
        raise ValueError(f"Unknown precision mode {precision!r}; use one of {', '.join(PRECISION_MODES)}.")
    return precision


def cuda_provider_options(precision: str) -> dict[str, str]:
    """The CUDA provider options Fixport sets for ``precision`` (deployed: none, the defaults)."""
    return dict(STRICT_CUDA_OPTIONS) if check_precision(precision) == STRICT else {}
