"""The runtimes an export is checked in, by name: ONNX Runtime (its CPU and CUDA providers) and
OpenVINO, an optional extra. Plain words and an installed-or-not test; nothing here imports a runtime."""
from __future__ import annotations

from importlib import metadata

from fixport.core.foundation.errors import FixportError

ORT = "ort"
OPENVINO = "openvino"  # --runtime openvino; the provider value the jobs take for it
RUNTIMES = (ORT, OPENVINO)
DEFAULT_RUNTIME = ORT
RUNTIME_TITLES = {ORT: "ONNX Runtime", OPENVINO: "OpenVINO"}
OPENVINO_NAME = "OpenVINO (CPU)"  # what a result's providers_used lists for a run in OpenVINO
OPENVINO_INSTALL = 'pip install -e ".[openvino]"'
OPENVINO_PRECISION_HELP = ("in OpenVINO, strict sets INFERENCE_PRECISION_HINT=f32 (measures the export) and deployed "
                           "keeps OpenVINO's default (bf16 on CPUs with bfloat16 instructions), held to bfloat16's "
                           "tolerance")


def openvino_unavailable_reason() -> str:
    """Why OpenVINO cannot run here ("" when it is installed), saying what to install."""
    try:
        metadata.version(OPENVINO)
    except metadata.PackageNotFoundError:
        return (f"OpenVINO is not installed (it is an optional extra): run `{OPENVINO_INSTALL}` or "
                "`pip install openvino`.")
    return ""


def provider_for(runtime: str, provider: str) -> str:
    """The provider value a job takes: ``provider`` (cpu, cuda) in ONNX Runtime, "openvino" in OpenVINO."""
    return OPENVINO if runtime == OPENVINO else provider


def refuse_missing_runtime(provider: str) -> None:
    """A FixportError (exit 2) naming what to install when ``provider`` is OpenVINO and it is not installed."""
    why = openvino_unavailable_reason() if provider == OPENVINO else ""
    if why:
        raise FixportError(f"--runtime openvino: {why}",
                           f"Install it (`{OPENVINO_INSTALL}`), or leave out --runtime to check in ONNX Runtime.",
                           window_hint="Install OpenVINO, or pick CPU or CUDA in the Provider box.")
