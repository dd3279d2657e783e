"""OpenVINO as a second runtime: an ONNX model compiled for OpenVINO's CPU plugin, run the way an
ONNX Runtime session is (``run``, ``get_inputs``, ``get_outputs``), so the comparison, the check and
the per-node analysis take either runtime.

OpenVINO's CPU plugin computes float32 models in bfloat16 where the CPU has bfloat16 instructions
(AVX512-BF16, AMX): its default ``INFERENCE_PRECISION_HINT``. That is a precision mode, as the CUDA
provider's TF32 is (cuda_precision.py): "strict" sets the hint to f32 and measures the export;
"deployed" keeps OpenVINO's default and is held to bfloat16's tolerance (core/project/tolerances.py).
OpenVINO is an optional extra; without it, asking for it says what to install.
"""
from __future__ import annotations

import io
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from fixport.core.onnx_io.cuda_precision import STRICT, check_precision
from fixport.core.onnx_io.external_data import session_source
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.words.runtimes import OPENVINO_NAME, openvino_unavailable_reason

OPENVINO_DEVICE = "CPU"
PRECISION_HINT = "INFERENCE_PRECISION_HINT"
INFERENCE_PRECISION = "inference precision"  # the key of what OpenVINO reports it computes in
BF16_TYPES = frozenset({"bf16", "bfloat16"})
F32_DEFAULT_NOTE = ("Precision 'deployed' in OpenVINO: its CPU default here computes in {precision} (this CPU has "
                    "no bfloat16 instructions), so the default tolerances apply.")
STRICT_OPENVINO_CONFIG: dict[str, str] = {PRECISION_HINT: "f32"}  # default: bf16 where the CPU has it

class OpenVinoMissing(RuntimeError):
    """OpenVINO was asked for but is not installed."""


def openvino_config(precision: str) -> dict[str, str]:
    """The compile properties Fixport sets for ``precision`` (deployed: none, OpenVINO's defaults)."""
    return dict(STRICT_OPENVINO_CONFIG) if check_precision(precision) == STRICT else {}


def openvino_tolerances(tolerances: ToleranceTable, inference_precision: str, messages: list[str]
                        ) -> ToleranceTable:
    """The table for a deployed OpenVINO run: bfloat16's rows where OpenVINO computes in bfloat16
    (its default on CPUs with bfloat16 instructions); the table as it is, and a note, otherwise."""
    if inference_precision.lower() in BF16_TYPES:
        return tolerances.for_bfloat16_compute()
    messages.append(F32_DEFAULT_NOTE.format(precision=inference_precision or "float32"))
    return tolerances


@dataclass(frozen=True)
class PortInfo:
    """An input or output as ONNX Runtime's ``NodeArg`` names it (only ``name`` is read)."""

    name: str
    shape: tuple[Any, ...] = ()
    type: str = ""


class OpenVinoSession:
    """An OpenVINO compiled model with ONNX Runtime's session surface: ``run(names, feeds)`` returns
    numpy arrays in the ONNX graph's output order."""

    def __init__(self, compiled: Any, output_names: Sequence[str], input_names: Sequence[str],
                 inference_precision: str) -> None:
        self.compiled = compiled
        self.inference_precision = inference_precision  # what OpenVINO reports it computes in
        self._outputs = [PortInfo(name) for name in output_names]
        self._inputs = [PortInfo(name) for name in input_names]
        ports = {}
        for port in compiled.outputs:
            for name in port.get_names():
                ports.setdefault(name, port)
        self._ports = ports
        self._request = compiled.create_infer_request()

    def get_inputs(self) -> list[PortInfo]:
        return list(self._inputs)

    def get_outputs(self) -> list[PortInfo]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return [OPENVINO_NAME]

    def end_profiling(self) -> str:
        return ""  # no per-node placement: OpenVINO runs every node on its one device

    def run(self, output_names: Sequence[str] | None, feeds: dict[str, np.ndarray], run_options: Any = None
            ) -> list[np.ndarray]:
        """The outputs named (all when None), as ONNX Runtime returns them."""
        wanted = list(output_names) if output_names else [port.name for port in self._outputs]
        results = self._request.infer({name: np.ascontiguousarray(value) for name, value in feeds.items()},
                                      share_inputs=False, share_outputs=False)
        by_port = {port.get_any_name(): value for port, value in results.items()}
        outputs = []
        for name in wanted:
            port = self._ports.get(name)
            if port is None:
                raise KeyError(f"OpenVINO's compiled model has no output {name!r}")
            outputs.append(np.array(by_port[port.get_any_name()], copy=True))
        return outputs


def create_openvino_session(model: OnnxModel | onnx.ModelProto | bytes | str, precision: str = STRICT
                            ) -> tuple[OpenVinoSession, dict[str, str]]:
    """``model`` read and compiled for OpenVINO's CPU plugin with ``precision``'s hint; the session
    and the properties Fixport set. :class:`OpenVinoMissing` when OpenVINO is not installed."""
    why = openvino_unavailable_reason()
    if why:
        raise OpenVinoMissing(why)
    import openvino as ov

    config = openvino_config(precision)
    proto = _proto_of(model)
    core = ov.Core()
    if isinstance(model, OnnxModel) and model.weights_on_disk:
        read = _read_beside_weights(core, model)
    else:
        with session_source(model.proto if isinstance(model, OnnxModel) else model) as source:
            read = core.read_model(source) if isinstance(source, str) else core.read_model(io.BytesIO(source))
    compiled = core.compile_model(read, OPENVINO_DEVICE, config)
    precision_used = str(compiled.get_property(PRECISION_HINT)).replace("<Type: '", "").rstrip("'>")
    initializers = {tensor.name for tensor in proto.graph.initializer}
    inputs = [value.name for value in proto.graph.input if value.name not in initializers]
    session = OpenVinoSession(compiled, [value.name for value in proto.graph.output], inputs, precision_used)
    return session, {**config, INFERENCE_PRECISION: precision_used}


def _read_beside_weights(core: Any, model: OnnxModel) -> Any:
    """A model whose weights stay in their folder: its graph written there for a moment (external data
    paths are relative to the graph's file), read, and removed."""
    with tempfile.NamedTemporaryFile(dir=model.base_dir, prefix=".fixport-openvino-", suffix=".onnx",
                                     delete=False) as handle:
        handle.write(model.proto.SerializeToString())
    try:
        return core.read_model(handle.name)
    finally:
        Path(handle.name).unlink(missing_ok=True)


def _proto_of(model: OnnxModel | onnx.ModelProto | bytes | str) -> onnx.ModelProto:
    if isinstance(model, OnnxModel):
        return model.proto
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, bytes):
        return onnx.load_from_string(model)
    return onnx.load(model, load_external_data=False)
