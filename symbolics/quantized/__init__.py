"""Fixes for ops of the ``quantized`` namespace, one file each (see fixport.symbolics.api)."""
