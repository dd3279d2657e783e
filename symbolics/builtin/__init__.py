"""Fixport's built-in symbolic templates, one importable module per template, by family."""
