"""Built-in templates of the 'decompose' family."""
