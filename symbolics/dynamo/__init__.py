"""Templates and generated fixes for the dynamo exporter (ONNX functions per op overload)."""
