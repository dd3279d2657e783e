"""ONNX Runtime sessions: provider choice with an honest CPU fallback, and a one-shot run."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import onnx
import onnxruntime as ort

ORT_LOG_ERRORS = 3
ORT_LOG_FATAL_ONLY = 4  # for probing runs whose errors Fixport reports itself
PROVIDERS = {"cpu": ["CPUExecutionProvider"], "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"]}


@dataclass
class SessionInfo:
    """A session plus what the user asked for and what ORT actually used."""

    session: ort.InferenceSession
    provider_requested: str
    providers_used: list[str]
    messages: list[str] = field(default_factory=list)


def cuda_available() -> tuple[bool, str]:
    """Whether ORT can run on CUDA here, and if not, why (for tooltips and messages)."""
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return False, ("CUDA is not available: this onnxruntime build has no CUDA provider "
                       "(install onnxruntime-gpu on a machine with an NVIDIA GPU).")
    return True, ""


def create_session(model: onnx.ModelProto | bytes | str, provider: str = "cpu",
                   extra_session_options: ort.SessionOptions | None = None,
                   log_severity: int = ORT_LOG_ERRORS) -> SessionInfo:
    """A session on ``provider``; CUDA requested but absent falls back to CPU with a message."""
    messages: list[str] = []
    provider = provider.lower()
    if provider not in PROVIDERS:
        raise ValueError(f"Unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}.")
    providers = PROVIDERS[provider]
    if provider == "cuda":
        available, why = cuda_available()
        if not available:
            messages.append(f"{why} Running on CPU instead.")
            providers = PROVIDERS["cpu"]
    options = extra_session_options or ort.SessionOptions()
    options.log_severity_level = log_severity
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    session = ort.InferenceSession(source, sess_options=options, providers=providers)
    return SessionInfo(session, provider, session.get_providers(), messages)


def feeds_for(session: ort.InferenceSession, names: Sequence[str], arrays: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Map arrays to the session's inputs by name, else by position."""
    wanted = [i.name for i in session.get_inputs()]
    by_name = dict(zip(names, arrays))
    if all(name in by_name for name in wanted):
        return {name: by_name[name] for name in wanted}
    return dict(zip(wanted, arrays))


def run_once(model: onnx.ModelProto, input_names: Sequence[str], inputs: Sequence) -> str | None:
    """Load and run ``model`` on CPU once; the ORT error text, or None when it runs."""
    arrays = [t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t) for t in inputs]
    try:
        session = create_session(model, "cpu", log_severity=ORT_LOG_FATAL_ONLY).session
        session.run(None, feeds_for(session, input_names, arrays))
    except Exception as exc:  # ORT raises its own exception types for load and run failures
        return str(exc)
    return None
