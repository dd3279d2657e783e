"""torch against ONNX Runtime in numbers: per-output statistics and tied orders (no torch)."""
