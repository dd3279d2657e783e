"""Shared helpers for the template tests: real export to BytesIO and a real ORT session."""
from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime
import torch

from fixport.core.exporters.torchscript.source_graph import instance_keys
from fixport.core.exporters.torchscript.symbolic_registration import (
    MappingSpec,
    registered_mappings,
)
from fixport.symbolics.library import TemplateLibrary

ATOL = 1e-4  # float32 absolute tolerance for every built-in template

LIBRARY = TemplateLibrary(user_dir="/nonexistent/fixport-test-user-templates")


def spec_for(template_id: str, target_kind: str, *, instance: str | None = None,
             python_op_name: str | None = None, **params: Any) -> MappingSpec:
    info = LIBRARY.get(template_id)
    merged = {**info.default_params(), **params}
    opsets = dict(info.custom_opsets)
    if "domain" in merged:
        opsets = {merged["domain"]: merged.get("domain_version", 1)}
    return MappingSpec(target_kind, instance, template_id, info.source, merged, python_op_name,
                       opsets, info.min_opset, info.max_opset)


def key_of(node: torch._C.Node) -> str:
    """Instance key as fixport.core.exporters.torchscript.source_graph computes it over the node's whole graph."""
    block = node.owningBlock()
    while block.owningNode() is not None:
        block = block.owningNode().owningBlock()
    nodes: list[torch._C.Node] = []

    def visit(block_nodes) -> None:
        for item in block_nodes:
            nodes.append(item)
            for sub in item.blocks():
                visit(sub.nodes())

    visit(block.nodes())
    return instance_keys(nodes).get(node, "")


def export(model: torch.nn.Module, inputs: Sequence[torch.Tensor], specs: list[MappingSpec],
           opset: int, **options: Any) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with registered_mappings(specs, opset, key_of) as custom_opsets, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs), buffer, dynamo=False, opset_version=opset,
                          custom_opsets=custom_opsets, **options)
    return onnx.load_from_string(buffer.getvalue())


def run_ort(proto: onnx.ModelProto, inputs: Sequence[torch.Tensor]) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {meta.name: value.numpy() for meta, value in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def assert_matches_torch(model: torch.nn.Module, inputs: Sequence[torch.Tensor],
                         specs: list[MappingSpec], opset: int, **options: Any) -> onnx.ModelProto:
    proto = export(model, inputs, specs, opset, **options)
    with torch.no_grad():
        expected = model(*inputs)
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    for got, want in zip(run_ort(proto, inputs), expected):
        np.testing.assert_allclose(got, want.numpy(), atol=ATOL, rtol=0, equal_nan=True)
    return proto


class Lambda(torch.nn.Module):
    """Wrap a function as a module for export."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def opinfo_inputs(name: str, variant: str = "") -> list[tuple[torch.Tensor, dict[str, Any]]]:
    """(input, kwargs) pairs from OpInfo sample_inputs, float32 CPU, tensor args only."""
    from torch.testing._internal.common_methods_invocations import op_db

    info = next(op for op in op_db if op.name == name and op.variant_test_name == variant)
    samples = []
    for sample in info.sample_inputs("cpu", torch.float32, requires_grad=False):
        if sample.input.numel() == 0 or sample.input.dim() == 0:
            continue  # zero-size / 0-d inputs: nothing to compare through ORT
        samples.append((sample.input, sample.args, dict(sample.kwargs)))
    return samples
