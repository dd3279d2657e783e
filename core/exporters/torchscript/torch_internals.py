"""Every private torch name the TorchScript exporter touches,
the package's seam with torch (see ``core/exporters/__init__.py``)."""
from __future__ import annotations

TORCH_RANGE = ">=2.9,<2.15"  # pyproject.toml's pin; every name below resolves in the torch CI installs

# What for -> the torch names used for it.
TORCH_INTERNALS: dict[str, tuple[str, ...]] = {
    "the TorchScript IR: graphs, nodes, values and their types; the ONNX passes Fixport wraps": (
        "torch._C.ClassType",
        "torch._C.Graph",
        "torch._C.Graph._export_onnx",
        "torch._C.ListType",
        "torch._C.Node",
        "torch._C.NoneType",
        "torch._C.OptionalType",
        "torch._C.TensorType",
        "torch._C.TensorType.get",
        "torch._C.TupleType",
        "torch._C.Value",
        "torch._C._create_function_from_graph",
        "torch._C._jit_get_schemas_for_operator",
        "torch._C._jit_pass_dce",
        "torch._C._jit_pass_erase_number_types",
        "torch._C._jit_pass_onnx",
        "torch._C._jit_pass_onnx_graph_shape_type_inference",
        "torch._C._jit_pass_onnx_remove_inplace_ops_for_onnx",
        "torch._C._jit_pass_onnx_scalar_type_analysis",
        "torch._C._onnx.OperatorExportTypes.ONNX",
    ),
    "the helpers symbolics are written with": (
        "torch.onnx._internal.torchscript_exporter._type_utils.JitScalarType.from_dtype",
        "torch.onnx._internal.torchscript_exporter.jit_utils.GraphContext",
        "torch.onnx._internal.torchscript_exporter.symbolic_helper._node_get",
    ),
    "the process-global symbolic registry: snapshot, restore, per-node dispatch": (
        "torch.onnx._internal.torchscript_exporter.registration._dispatch_opset_version",
        "torch.onnx._internal.torchscript_exporter.registration.registry._registry",
        "torch.onnx._internal.torchscript_exporter.registration.registry._registry.items",
        "torch.onnx._internal.torchscript_exporter.registration.registry.get_function_group",
        "torch.onnx._internal.torchscript_exporter.registration.registry.is_registered_op",
        "torch.onnx._internal.torchscript_exporter.registration.registry.register",
        "torch.onnx._internal.torchscript_exporter.registration.registry.unregister",
    ),
    "the exporter's own steps: graph creation, symbolic dispatch, registration": (
        "torch.onnx._internal.torchscript_exporter.utils.GLOBALS.export_onnx_opset_version",
        "torch.onnx._internal.torchscript_exporter.utils._create_jit_graph",
        "torch.onnx._internal.torchscript_exporter.utils._params_dict",
        "torch.onnx._internal.torchscript_exporter.utils._run_symbolic_function",
        "torch.onnx._internal.torchscript_exporter.utils._trigger_symbolic_function_registration",
        "torch.onnx._internal.torchscript_exporter.utils.register_custom_op_symbolic",
    ),
}
