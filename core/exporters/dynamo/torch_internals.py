"""Every private torch name the dynamo exporter touches,
the package's seam with torch (see ``core/exporters/__init__.py``)."""
from __future__ import annotations

TORCH_RANGE = ">=2.9,<2.15"  # pyproject.toml's pin; every name below resolves in the torch CI installs

# What for -> the torch names used for it.
TORCH_INTERNALS: dict[str, tuple[str, ...]] = {
    "torch.export's own error for a dynamic-shapes specification (its suggested fixes)": (
        "torch._dynamo.exc.UserError",
    ),
    "FX op overloads": (
        "torch._ops.OpOverload",
    ),
    "the size-oblivious capture torch.onnx sets, for the second capture that names pinned dims": (
        "torch.fx.experimental._config.patch",
    ),
    "a range with no upper end (torch's int_oo, which sympy calls finite), for the pinned-dims check": (
        "torch.utils._sympy.numbers.int_oo",
    ),
    "effect tokens taken out of the captured program": (
        "torch.export._remove_effect_tokens_pass._remove_effect_tokens",
    ),
    "torch.onnx's default opset": (
        "torch.onnx._constants.ONNX_DEFAULT_OPSET",
    ),
    "torch.onnx's own passes, constants and lazy imports": (
        "torch.onnx._internal._lazy_import.onnxscript_apis.convert_version",
        "torch.onnx._internal.exporter._constants.TORCHLIB_OPSET",
        "torch.onnx._internal.exporter._dispatching.dispatch",
        "torch.onnx._internal.exporter._dynamic_shapes.convert_str_to_export_dim",
        "torch.onnx._internal.exporter._fx_passes._decomp.create_onnx_friendly_decomposition_table",
        "torch.onnx._internal.exporter._ir_passes.rename_inputs",
        "torch.onnx._internal.exporter._ir_passes.rename_outputs",
    ),
    "the capture strategies torch.onnx tries in turn": (
        "torch.onnx._internal.exporter._capture_strategies.CaptureStrategy",
        "torch.onnx._internal.exporter._capture_strategies.TorchExportNonStrictStrategy",
        "torch.onnx._internal.exporter._capture_strategies.TorchExportStrictStrategy",
    ),
    "the translation of an ExportedProgram, node by node": (
        "torch.onnx._internal.exporter._core._exported_program_to_onnx_program",
        "torch.onnx._internal.exporter._core._handle_call_function_node_with_lowering",
        "torch.onnx._internal.exporter._core._is_onnx_op",
        "torch.onnx._internal.exporter._core._prepare_exported_program_for_export",
    ),
    "the ONNX registry a translation table extends": (
        "torch.onnx._internal.exporter._registration.ONNXRegistry.__dict__",
        "torch.onnx._internal.exporter._registration.ONNXRegistry.from_torchlib",
    ),
    "nested inputs and outputs, flattened the way torch.export flattens them": (
        "torch.utils._pytree.tree_leaves",
        "torch.utils._pytree.tree_map",
        "torch.utils._pytree.tree_map_only",
    ),
}
