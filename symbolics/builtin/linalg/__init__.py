"""Built-in templates of the 'linalg' family."""
