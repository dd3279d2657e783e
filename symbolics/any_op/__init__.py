"""Generic fixes that fit any op (``*``): a custom-domain node, an ATen fallback, a 1:1 ONNX op, ..."""
