"""Built-in templates of the 'fft' family."""
