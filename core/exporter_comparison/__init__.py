"""Both exporters for one model: what each needed (check, fix --auto) and how each compares (compare).

A room above fixing and comparison, which it combines; the worker runs its job.
"""
