"""Built-in templates of the 'quantized' family."""
