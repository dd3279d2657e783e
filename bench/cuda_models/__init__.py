"""Models `bench/cuda_check.py` adds to the examples and the corpus: the architectures CUDA must run."""
