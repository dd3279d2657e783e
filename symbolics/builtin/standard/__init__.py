"""Built-in templates of the 'standard' family."""
