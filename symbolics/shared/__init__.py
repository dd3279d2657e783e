"""ONNX functions written once for both exporters (see fixport.symbolics.onnx_functions)."""
