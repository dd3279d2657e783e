"""Built-in templates of the 'aten_fallback' family."""
