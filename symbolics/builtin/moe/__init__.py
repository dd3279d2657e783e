"""Built-in templates of the 'moe' family."""
