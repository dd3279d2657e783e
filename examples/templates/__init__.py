"""Templates written for one example model each (the tutorial's), loaded as built-ins."""
