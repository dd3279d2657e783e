"""Held-out architectures with their natural dynamic axes (bench/dynamic_axes_sweep.py)."""
