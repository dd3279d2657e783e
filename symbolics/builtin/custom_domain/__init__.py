"""Built-in templates of the 'custom_domain' family."""
