"""Several sets of example inputs from ``build()``, and the dynamic dims they show.

``build()`` may return ``(model, [set1, set2, ...])``: a list (``torch.onnx.export`` takes ``args``
as a tuple, so a list is never one set) of sets, each an args tuple, a kwargs dict or an
``(args, kwargs)`` pair, in the forms one set takes. The first set is the example the export
traces; every set must flatten to the same named tensors (their sizes may differ), since the
export takes one structure. The dims whose sizes differ between the sets are inferred by torch's
own ``torch.onnx.InputObserver`` and named here, equal sizes in every set giving one name.

The functions are the fix script's support's (``core/foundation/input_sets.py``), which the
script carries whole; the engine adds what it tells the user about them.
"""
from __future__ import annotations

__all__ = ["SETS_ONLY_NOTE"]

SETS_ONLY_NOTE = ("The dims inferred from build()'s input sets are checked at the sets' own sizes, not at sizes made "
                  "up for them, which could break relations the sets keep (a mask as long as past + sequence); "
                  "name other sizes to check with --shapes (in the window: Run > Shapes to check…).")
