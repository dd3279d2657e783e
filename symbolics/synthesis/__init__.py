"""Synthesized fixes: template sources generated for the op at hand, from what torch and ONNX know.

Each generator writes an ordinary template (docstring, ``symbolic`` under ``@fix(...)``, whose
arguments :func:`fixport.core.project.template_form.fix_decorator` writes) that the user can read,
edit and save like a built-in one:

- :mod:`.standard_op` -- the ONNX op of the same name and tensor inputs (``aten::cosh`` -> Cosh);
- :mod:`.decomposition` -- torch's own decomposition of the op, replayed at export time by
  :mod:`.replay` through the exporter's registered symbolics (steps without one through
  onnxscript's torch_lib), with Fixport's own decompositions (:mod:`.extra_scans`,
  :mod:`.extra_linalg`, :mod:`.extra_special`) where torch's convert to nothing;
- :mod:`.materialise` -- for ops linear in their inputs at static shapes, one MatMul with the
  constant matrix torch computes (shape-specialised).

:mod:`.offers` ranks them beside the library's templates. These modules import torch: they run
in the worker, never in the window or the command line.
"""
