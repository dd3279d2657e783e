"""Fixes for ``prim::PythonOp`` (an ``autograd.Function``), which only TorchScript exports."""
