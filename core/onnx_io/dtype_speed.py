"""What each ONNX Runtime provider does with an export's dtype, from its kernel table.

The CPU provider's answer is read from the installed build's own kernel table (kernel_table.py):
whether the ops a transformer spends its time in have a kernel for the dtype. The CUDA provider's
cannot be read from a CPU build; it is ONNX Runtime's published CUDA kernel table
(docs/OperatorKernels.md): MatMul, Softmax, Add/Mul and the activations take float16 and bfloat16,
while a few ops (ReduceMean, Reciprocal) take float16 but no bfloat16.
"""
from __future__ import annotations

from fixport.core.onnx_io.kernel_table import KernelRow, cpu_kernel_rows
from fixport.core.words.export_dtype import ExportDtype, ProviderSpeed

# The ops a transformer's time goes to: a provider without them in a dtype does not run that dtype fast.
COMPUTE_OPS = ("MatMul", "Gemm", "Add", "Mul", "Softmax")
ORT_TYPE = {"float32": "tensor(float)", "float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)"}
CUDA_TABLE = "ONNX Runtime's CUDA kernel table (docs/OperatorKernels.md)"
CUDA_SPEEDS = {
    "float32": ProviderSpeed("CUDA", "float32", True, "float32 kernels for every op (MatMul in TF32 on Ampere and "
                             "newer unless strict); float16 or bfloat16 would use the tensor cores at full rate.",
                             CUDA_TABLE),
    "float16": ProviderSpeed("CUDA", "float16", True, "float16 kernels for MatMul, Softmax, the normalizations and "
                             "the elementwise ops: runs in float16 on the tensor cores, the fast choice on a GPU.",
                             CUDA_TABLE),
    "bfloat16": ProviderSpeed("CUDA", "bfloat16", True, "bfloat16 kernels for MatMul, Softmax, Add/Mul and the "
                              "activations (tensor cores on Ampere and newer), but not for every op: ReduceMean and "
                              "Reciprocal take none, and the CPU provider they fall back to has none either.",
                              CUDA_TABLE),
}


def cpu_speed(dtype: str, rows: list[KernelRow] | None = None) -> ProviderSpeed:
    """How the installed ONNX Runtime's CPU provider runs ``dtype`` (from its kernel table)."""
    rows = cpu_kernel_rows() if rows is None else rows
    source = "the installed ONNX Runtime's CPU kernel table"
    if not rows:
        return ProviderSpeed("CPU", "", dtype == "float32", "its kernel table could not be read here.", source)
    wanted = ORT_TYPE.get(dtype, f"tensor({dtype})")
    lacking = [op for op in COMPUTE_OPS if not any(row[0] == op and row[1] == "" and
                                                   any(wanted in types for types in row[3].values())
                                                   for row in rows)]
    if not lacking:
        return ProviderSpeed("CPU", dtype, True, f"{dtype} kernels for {', '.join(COMPUTE_OPS)}: runs in {dtype}.",
                             source)
    named = ", ".join(lacking)
    if dtype == "float16":
        how = (f"no float16 kernel for {named}: ONNX Runtime casts to float32 around each of them, so it computes "
               "in float32 with the casts on top, slower than a float32 export (--dtype float32 for CPU).")
        return ProviderSpeed("CPU", "float32", False, how, source)
    if dtype == "bfloat16":
        how = (f"no bfloat16 kernel for {named}: the CPU provider refuses the export as saved (Fixport checks it "
               "widened to float32, exactly, rounding where the graph casts); export with --dtype float32 to run it "
               "on CPU.")
        return ProviderSpeed("CPU", "", False, how, source)
    return ProviderSpeed("CPU", "", False, f"no {dtype} kernel for {named}.", source)


def provider_speeds(dtype: str) -> list[ProviderSpeed]:
    """The CPU provider's answer for ``dtype`` (read here) and the CUDA provider's (published)."""
    speeds = [cpu_speed(dtype)]
    if dtype in CUDA_SPEEDS:
        speeds.append(CUDA_SPEEDS[dtype])
    return speeds


def export_dtype(dtype: str, checkpoint_dtype: str, chosen: str) -> ExportDtype:
    """The record a checkpoint's analysis and comparison carry: the dtype exported, the checkpoint's own,
    what --dtype asked, and each provider's answer."""
    return ExportDtype(dtype, checkpoint_dtype, chosen, provider_speeds(dtype))
