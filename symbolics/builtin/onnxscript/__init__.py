"""Built-in templates of the 'onnxscript' family."""
