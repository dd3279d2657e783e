"""Which ONNX Runtime is installed, and whether its CUDA provider really loads (no torch, no onnxruntime import).

``onnxruntime`` and ``onnxruntime-gpu`` install the same Python module: with both installed, the
files of the last one installed win, piecemeal. ORT's CUDA provider that cannot load its CUDA or
cuDNN libraries logs a long error and silently runs on CPU; the only reliable sign is the
session's own provider list.
"""
from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata

# Distributions that all install the module `onnxruntime`.
RUNTIME_DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino",
                         "onnxruntime-training", "ort-nightly", "ort-nightly-gpu")
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_INSTALL = 'pip install -e ".[cpu]"'
CUDA_INSTALL = 'pip install -e ".[cuda]"'
UNINSTALL_ALL = "pip uninstall -y onnxruntime onnxruntime-gpu"
CUDA_LIBRARIES_HINT = ("onnxruntime-gpu 1.31 needs the CUDA 13 runtime, cuBLAS and cuDNN 9 libraries: install "
                       "them (`pip install \"onnxruntime-gpu[cuda,cudnn]\"`, or a CUDA build of torch and import it "
                       "first, or call onnxruntime.preload_dlls()), and check `nvidia-smi` sees the GPU")


def installed_runtimes() -> dict[str, str]:
    """Distribution name -> version, for every installed distribution that provides `onnxruntime`."""
    found: dict[str, str] = {}
    for name in RUNTIME_DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def runtime_problem(installed: dict[str, str] | None = None) -> str | None:
    """What is wrong with the installed ONNX Runtime distributions, with what to run; None when one is installed."""
    installed = installed_runtimes() if installed is None else installed
    if not installed:
        return (f"ONNX Runtime is not installed. Run `{CPU_INSTALL}`, or `{CUDA_INSTALL}` on a machine with an "
                "NVIDIA GPU.")
    if len(installed) > 1:
        listed = " and ".join(f"{name} {version}" for name, version in installed.items())
        return (f"{listed} are both installed: they are the same Python module `onnxruntime` and overwrite each "
                f"other's files, so which one runs is an accident. Run `{UNINSTALL_ALL}`, then `{CUDA_INSTALL}` "
                f"for the GPU or `{CPU_INSTALL}`.")
    return None


def cuda_unavailable_reason(available_providers: Sequence[str], installed: dict[str, str] | None = None) -> str:
    """Why ORT has no CUDA provider here ("" when it lists one); says what to install."""
    if CUDA_PROVIDER in available_providers:
        return ""
    problem = runtime_problem(installed)
    if problem:
        return f"CUDA is not available: {problem}"
    return ("CUDA is not available: this onnxruntime build has no CUDA provider (on a machine with an NVIDIA "
            f"GPU: `{UNINSTALL_ALL}`, then `{CUDA_INSTALL}`).")


def cuda_fallback_message(providers_asked: Sequence[str], providers_used: Sequence[str]) -> str | None:
    """A message when CUDA was asked of a session but the session runs without it (ORT's silent fallback)."""
    if CUDA_PROVIDER not in providers_asked or CUDA_PROVIDER in providers_used:
        return None
    return (f"ONNX Runtime lists the CUDA provider but the session runs on {', '.join(providers_used)}: the CUDA "
            f"provider could not load its libraries (ORT's own error is in its log). {CUDA_LIBRARIES_HINT}.")
