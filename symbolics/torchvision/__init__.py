"""Fixes for ops of the ``torchvision`` namespace, one file each (see fixport.symbolics.api)."""
