"""Everything that depends on the exporter: the protocol (``base``), the torch-free profiles, the
choice of exporter object, and one package per exporter (``torchscript/``, ``dynamo/``) plus the
torch.export tools both use (``torch_export/``). Outside this package, code reaches an exporter only
through ``base``, ``profiles`` and ``choice`` (an import-linter contract)."""
