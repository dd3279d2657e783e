"""Fixport: a workbench for fixing what torch.onnx.export cannot handle.

The repository root is the ``fixport`` package (``pyproject.toml`` maps it), so an install
puts one top-level package in site-packages. Where things live:

- ``core/foundation``: what the engine stands on and every fix script carries whole.
- ``core/words``, ``core/statistics``, ``core/project``, ``core/records`` (torch-free): the shared
  words (vocabulary, errors, problems, graph), comparison statistics, what the user saves, and
  what crosses the worker.
- ``core/onnx_io``: reading, checking and running ONNX files (onnx, onnxruntime; no torch).
- ``core/panes``: grouping and layout of graph panes (no torch, no Qt).
- ``core/loaders``: opening model files and tracing them (torch).
- ``core/exporters``: the exporters, the only code that touches torch.onnx internals.
- ``core/fixing``: choosing fixes (``fix --auto``) and writing fix scripts.
- ``core/comparison``: torch vs ONNX Runtime, output by output and node by node.
- ``core/worker``: the worker process and the table of jobs it runs.
- ``cli`` and ``gui``: the two front ends; neither imports torch.
- ``symbolics``: the fix library users read, edit and override.
"""
