"""Everything that depends on the exporter: the protocol (``base``), the torch-free profiles, the
choice of exporter object, and one package per exporter (``torchscript/``, ``dynamo/``) plus the
torch.export tools both use (``torch_export/``). Outside this package, code reaches an exporter only
through ``base``, ``profiles`` and ``choice`` (an import-linter contract).

Each package keeps a ``torch_internals`` module: every private torch name it touches, with the torch
range it is pinned to (torch.onnx keeps such a seam for itself, ``torch/onnx/_internal/exporter/
_compat.py``). ``tests/test_torch_seams.py`` fails when a module of the package reaches a private
torch name that is not listed, or a listed name is gone from the installed torch."""
