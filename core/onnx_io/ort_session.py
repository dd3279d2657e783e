"""ONNX Runtime sessions: provider choice with an honest CPU fallback, and a one-shot run."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
import onnxruntime as ort

from fixport.core.foundation.bfloat16 import Bfloat16Session, bfloat16_values, has_bfloat16
from fixport.core.foundation.comparison import to_numpy
from fixport.core.foundation.session_feeds import feeds_for
from fixport.core.onnx_io.bfloat16_runs import (
    WIDENED_ON_CPU_NOTE,
    boundary_in_float32,
    casts_weights_at_use,
    widened,
)
from fixport.core.onnx_io.cuda_precision import DEFAULT_PRECISION, cuda_provider_options
from fixport.core.onnx_io.external_data import session_source
from fixport.core.onnx_io.onnx_model import OnnxModel, beside_file
from fixport.core.onnx_io.openvino_session import OpenVinoSession, create_openvino_session
from fixport.core.onnx_io.placement import enable_profiling
from fixport.core.onnx_io.resident_weights import release_clean_weight_pages
from fixport.core.onnx_io.runtime_check import CUDA_PROVIDER, cuda_fallback_message, cuda_unavailable_reason
from fixport.core.onnx_io.shared_weights import shared_initializers
from fixport.core.words.runtimes import OPENVINO

ORT_LOG_ERRORS = 3
ORT_LOG_FATAL_ONLY = 4  # for probing runs whose errors Fixport reports itself
PROVIDERS = {"cpu": ["CPUExecutionProvider"], "cuda": [CUDA_PROVIDER, "CPUExecutionProvider"]}
# Where ONNX Runtime looks for the external data of a model given as bytes.
EXTERNAL_DATA_FOLDER_KEY = "session.model_external_initializers_file_folder_path"


@dataclass
class SessionInfo:
    """A session plus what the user asked for and what ORT actually used."""

    session: ort.InferenceSession | Bfloat16Session | OpenVinoSession
    provider_requested: str
    providers_used: list[str]
    messages: list[str] = field(default_factory=list)
    precision: str = DEFAULT_PRECISION
    provider_options: dict[str, str] = field(default_factory=dict)  # set by Fixport on CUDA or OpenVINO


def quiet_run() -> ort.RunOptions:
    """Run options that keep ONNX Runtime's own error log off stderr: for runs whose failure
    Fixport reports itself (a failing input set's row)."""
    options = ort.RunOptions()
    options.log_severity_level = ORT_LOG_FATAL_ONLY
    return options


def cuda_available() -> tuple[bool, str]:
    """Whether ORT can run on CUDA here, and if not, why and what to install (tooltips, messages)."""
    why = cuda_unavailable_reason(ort.get_available_providers())
    return not why, why


def providers_for(provider: str, precision: str = DEFAULT_PRECISION) -> list[Any]:
    """ORT's ``providers`` argument: CUDA with the options of ``precision``, then CPU."""
    if provider == "cuda":
        return [(CUDA_PROVIDER, cuda_provider_options(precision)), "CPUExecutionProvider"]
    return list(PROVIDERS[provider])


def create_session(model: OnnxModel | onnx.ModelProto | bytes | str, provider: str = "cpu",
                   extra_session_options: ort.SessionOptions | None = None,
                   log_severity: int = ORT_LOG_ERRORS, precision: str = DEFAULT_PRECISION,
                   profile: bool = False, fold_constants: bool = True) -> SessionInfo:
    """A session on ``provider``; CUDA absent, or present but unable to load, falls back to CPU with a message.

    ``precision`` picks the CUDA provider's options (cuda_precision.py); ``profile`` records where
    each node runs (read it with :func:`fixport.core.onnx_io.placement.collect_placement`).
    ``fold_constants=False`` keeps ONNX Runtime from computing constant subgraphs when the session
    is made: for a model run once whose Transposes of weights were not folded by the exporter, the
    folded copies would be the size of the weights, kept for the session's life.
    """
    messages: list[str] = []
    provider = provider.lower()
    if provider == OPENVINO:  # a second runtime, not an ONNX Runtime provider (openvino_session.py)
        session, config = create_openvino_session(model, precision)
        return SessionInfo(session, provider, session.get_providers(), messages, precision, config)
    if provider not in PROVIDERS:
        raise ValueError(f"Unknown provider {provider!r}; use one of {', '.join([*PROVIDERS, OPENVINO])}.")
    runs_on = provider
    if provider == "cuda":
        available, why = cuda_available()
        if not available:
            messages.append(f"{why} Running on CPU instead.")
            runs_on = "cpu"
    asked = providers_for(runs_on, precision)
    model, bfloat16_names = _in_float32_where_bfloat16(model, runs_on)
    if bfloat16_names is not None and runs_on == "cpu":
        messages.append(WIDENED_ON_CPU_NOTE)
        fold_constants = fold_constants and not (isinstance(model, OnnxModel) and casts_weights_at_use(model.proto))
    unfolded = {} if fold_constants else {"disabled_optimizers": ["ConstantFolding"]}
    options = extra_session_options or ort.SessionOptions()
    options.log_severity_level = log_severity
    if profile:
        enable_profiling(options)
    if isinstance(model, OnnxModel) and model.weights_on_disk:  # the graph's bytes, the weights from their folder
        keep_one_copy_of_the_weights(options)
        release_clean_weight_pages()  # a model this size: torch's copy of the weights is not read meanwhile
        options.add_session_config_entry(EXTERNAL_DATA_FOLDER_KEY, str(model.base_dir))
        shared = shared_initializers(model.proto, model.base_dir)
        for name, value in shared.items():
            options.add_initializer(name, value)
        session = ort.InferenceSession(model.proto.SerializeToString(), sess_options=options, providers=asked,
                                       **unfolded)
        session.fixport_shared_weights = shared  # ONNX Runtime reads that memory for the session's life
    else:
        with session_source(model.proto if isinstance(model, OnnxModel) else model) as source:
            if isinstance(source, str):  # a big model, opened from its file
                keep_one_copy_of_the_weights(options)
                release_clean_weight_pages()
            session = ort.InferenceSession(source, sess_options=options, providers=asked, **unfolded)
    used = session.get_providers()
    if bfloat16_names is not None:
        session = Bfloat16Session(session, bfloat16_names)
    fallback = cuda_fallback_message([p[0] if isinstance(p, tuple) else p for p in asked], used)
    messages += [fallback] if fallback else []
    return SessionInfo(session, provider, used, messages, precision, applied_cuda_options(session, asked))


def _in_float32_where_bfloat16(model: OnnxModel | onnx.ModelProto | bytes | str, runs_on: str
                               ) -> tuple[OnnxModel | onnx.ModelProto | bytes | str, set[str] | None]:
    """A model with bfloat16 values as ONNX Runtime can be fed and read on ``runs_on`` (widened on
    CPU, float32 at its edges elsewhere: bfloat16_runs.py), with the names of the original's
    bfloat16 values; any other model as it is, with None."""
    if isinstance(model, (OnnxModel, onnx.ModelProto)):
        proto = model.proto if isinstance(model, OnnxModel) else model
    else:  # a path (its weights stay in their files) or bytes
        proto = onnx.load(model, load_external_data=False) if isinstance(model, str) else onnx.load_from_string(model)
    if not has_bfloat16(proto):
        return model, None
    if isinstance(model, OnnxModel):
        source = model
    else:
        source = beside_file(proto, Path(model)) if isinstance(model, str) else OnnxModel(proto)
    return (widened(source) if runs_on == "cpu" else boundary_in_float32(source)), bfloat16_values(proto)


def keep_one_copy_of_the_weights(options: ort.SessionOptions) -> None:
    """For a model the size of its weights: no pre-packed second copy of the MatMul/Gemm weights
    (it pays off over many runs, Fixport runs a model a few times) and no memory arena that keeps
    its peak after a run."""
    options.add_session_config_entry("session.disable_prepacking", "1")
    options.enable_cpu_mem_arena = False


def applied_cuda_options(session: ort.InferenceSession, asked: Sequence[Any]) -> dict[str, str]:
    """The options Fixport set on the CUDA provider, as the session reports them ({} without CUDA)."""
    wanted = next((p[1] for p in asked if isinstance(p, tuple) and p[0] == CUDA_PROVIDER), {})
    reported = session.get_provider_options().get(CUDA_PROVIDER)
    if reported is None:
        return {}
    return {name: str(reported.get(name, value)) for name, value in wanted.items()}


@dataclass
class CpuRun:
    """One CPU run of a model: its outputs, or ORT's error text."""

    outputs: list[Any] | None = None
    error: str | None = None


def run_on_cpu(model: OnnxModel | onnx.ModelProto, input_names: Sequence[str], inputs: Sequence) -> CpuRun:
    """Load and run ``model`` on CPU once, keeping the outputs (the analysis compares them with torch)."""
    arrays = [to_numpy(t) for t in inputs]
    try:
        session = create_session(model, "cpu", log_severity=ORT_LOG_FATAL_ONLY).session
        outputs = session.run(None, feeds_for(session, input_names, arrays))
    except Exception as exc:  # ORT raises its own exception types for load and run failures
        return CpuRun(error=str(exc))
    return CpuRun(outputs=list(outputs))
