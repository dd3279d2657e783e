"""Built-in templates of the 'autograd' family."""
