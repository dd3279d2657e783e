"""Built-in templates of the 'torchvision' family."""
