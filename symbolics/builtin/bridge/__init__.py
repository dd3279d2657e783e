"""Built-in templates of the 'bridge' family."""
