"""Fixes for ops of the ``aten`` namespace, one file each (see fixport.symbolics.api)."""
