"""Fixport's symbolic template library: built-in templates, user overrides, stubs."""
