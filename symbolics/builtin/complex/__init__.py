"""Built-in templates of the 'complex' family."""
