"""Tiny configs of architectures neither the corpus nor its tests name, for bench/fix_time.py --held-out."""
