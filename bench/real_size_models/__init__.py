"""Model files at their real published size for bench/real_size.py (random weights, built in code)."""
