"""The TorchScript exporter's weights written by Fixport, from torch's tensors straight to the
export's weights file, instead of through torch's ONNX encoder.

``torch.onnx.export(dynamo=False)`` encodes every parameter into its ModelProto unless the model
passes protobuf's 2 GB (then it writes one file per tensor). A model just under that, Qwen2-0.5B in
float32 (1.98 GB; exported without constant folding for the per-node analysis, as its folded
export passes 2 GB), is then held as a C++ proto, as its serialised bytes, parsed once more by
torch (``_add_onnxscript_fn``) and twice more when the file is read back: gigabytes of transient
copies on top of torch's own weights. While :func:`weights_written_to` is active, the encoder gets
no parameters, and the ones it was given become initializers of its light proto whose bytes go,
tensor by tensor, to the weights file of the export's folder: the model that
:func:`fixport.core.onnx_io.onnx_model.read_export` makes of a full export, without the copies.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import onnx
import torch
from torch.onnx._internal.torchscript_exporter import _type_utils

from fixport.core.onnx_io.external_data import EXTERNAL_TENSOR_MIN_BYTES, ExternalDataWriter

# torch 2.x's TorchScript exporter calls graph._export_onnx(params_dict, opset_version, dynamic_axes,
# defer_weight_export, operator_export_type, strip_doc_string, keep_initializers_as_inputs,
# custom_opsets, add_node_names, model_file_location, node_attr_to_name), positionally.
EXPORT_ONNX_ARGUMENTS = 11
DEFER_WEIGHT_EXPORT_ARGUMENT = 3
KEEP_INITIALIZERS_AS_INPUTS_ARGUMENT = 6


@contextmanager
def weights_written_to(data_path: Path) -> Iterator[None]:
    """For the exports run inside: parameters written to ``data_path`` (appended, aligned as
    :class:`ExternalDataWriter` does) and referenced from the model torch writes; a call this
    does not know how to take (another signature, deferred or quantized weights) goes to torch."""
    original = torch._C.Graph._export_onnx

    def export_onnx(graph: torch._C.Graph, *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != EXPORT_ONNX_ARGUMENTS or not _writable(args[0], args[DEFER_WEIGHT_EXPORT_ARGUMENT]):
            return original(graph, *args, **kwargs)
        params: Mapping[str, torch.Tensor] = args[0]
        model_bytes, *rest = original(graph, {}, *args[1:])
        model = onnx.load_model_from_string(model_bytes)
        order = [value.name for value in model.graph.input if value.name in params]
        if not args[KEEP_INITIALIZERS_AS_INPUTS_ARGUMENT]:
            kept = [value for value in model.graph.input if value.name not in params]
            del model.graph.input[:]
            model.graph.input.extend(kept)
        add_initializers(model, params, order, data_path)
        return (model.SerializeToString(), *rest)

    torch._C.Graph._export_onnx = export_onnx
    try:
        yield
    finally:
        torch._C.Graph._export_onnx = original


def add_initializers(model: onnx.ModelProto, params: Mapping[str, torch.Tensor], order: Sequence[str],
                     data_path: Path) -> None:
    """``params`` as initializers of ``model``, in ``order`` (the graph's inputs, as torch's encoder
    adds them); tensors of EXTERNAL_TENSOR_MIN_BYTES and more are written to ``data_path``, the
    smaller ones inline."""
    with ExternalDataWriter(data_path) as writer:
        for name in [*order, *sorted(set(params) - set(order))]:
            data = _bytes_of(params[name])
            tensor = model.graph.initializer.add()
            tensor.name = name
            tensor.dims.extend(params[name].shape)
            tensor.data_type = int(_type_utils.JitScalarType.from_dtype(params[name].dtype).onnx_type())
            if data.nbytes < EXTERNAL_TENSOR_MIN_BYTES:
                tensor.raw_data = data.tobytes()
            else:
                writer.add(tensor, lambda stream, data=data: stream.write(data))


def _writable(params: Any, defer_weight_export: bool) -> bool:
    """Whether every parameter is a plain dense tensor of an ONNX dtype, on a little-endian machine
    (raw_data is little-endian): then its memory is what torch's encoder would write."""
    if defer_weight_export or sys.byteorder != "little" or not isinstance(params, Mapping) or not params:
        return False
    for value in params.values():
        if not isinstance(value, torch.Tensor) or value.is_quantized or value.layout != torch.strided:
            return False
        try:
            _type_utils.JitScalarType.from_dtype(value.dtype).onnx_type()
        except Exception:  # a dtype ONNX has no tensor type for: torch's encoder says so itself
            return False
    return True


def _bytes_of(value: torch.Tensor) -> Any:
    """The tensor's bytes, C order, as a flat uint8 numpy view (a copy only when it is not contiguous
    or not on the CPU)."""
    return value.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy()
