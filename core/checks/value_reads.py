"""Where a model reads an input's values into Python: the lines a trace bakes them at.

``for h, w in grid.tolist()``, ``int(sizes[0])``, ``if (ids == pad).any():``: the model turns
an input's values into Python numbers. The TorchScript trace records those numbers as constants
(with a TracerWarning at that line), so the export holds only at the example values; it may
even drop the input. One eager run under a :class:`~torch.overrides.TorchFunctionMode` follows
each input's values through every torch call (a value computed from a followed tensor is
followed too) and notes the user's line wherever one is turned into a Python value. Sizes are
not values: ``int(x.shape[1])`` reads no tensor in eager mode, and the shape check covers it,
except where the size itself comes from an input's values: the count of ``nonzero(scores > t)``,
of ``x[mask]`` or of ``unique(batch)`` (keypoints, boxes, graphs). Reading such a size
(``len(keep)``, ``keep.shape[0]``) reads those values, and a trace bakes it the same way.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

# Tensor methods (and torch functions) that hand a tensor's values to Python.
VALUE_READS = frozenset({"tolist", "item", "numpy", "__array__", "__int__", "__float__", "__bool__", "__index__",
                         "__complex__", "__contains__", "__format__", "equal", "allclose", "is_nonzero"})
# Ops whose result's size depends on their inputs' values, and reads of a tensor's size.
DATA_DEPENDENT_SIZES = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount",
                                  "repeat_interleave"})
SIZE_READS = frozenset({"__len__", "size", "numel"})
IN_PLACE_WRITES = frozenset({"__setitem__", "copy_", "index_put_", "masked_fill_", "scatter_", "fill_"})
# Frames that are not the model's own code: torch's, and Fixport's engine (its examples are models),
# each as imported and as resolved (the package may be reached through a link).
_NOT_THE_MODELS_CODE = tuple(str(folder) + "/" for root in (Path(torch.__file__).parent, Path(__file__).parent.parent)
                             for folder in {root, root.resolve()})


def input_value_reads(module: torch.nn.Module, inputs: Sequence[torch.Tensor]) -> dict[int, list[str]]:
    """Input position -> the user's lines ('model.py:14') where forward() turned that input's
    values into Python values, in order of first read; inputs never read are left out. A model
    that raises on this run reads nothing we can tell ({})."""
    tracker = _ValueReadTracker(inputs)
    try:
        with torch.no_grad(), tracker:
            module(*inputs)
    except Exception:  # the check already ran the model; a failure here only means no answer
        return {}
    return tracker.reads


def _tensors(tree: object) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(tree)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _user_line(depth: int = 2) -> str:
    """'model.py:14' for the innermost frame outside torch and Fixport ('' when there is none)."""
    frame = sys._getframe(depth)
    while frame is not None:
        file = frame.f_code.co_filename
        if not file.startswith(_NOT_THE_MODELS_CODE) and not file.startswith("<"):
            return f"{Path(file).name}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


class _ValueReadTracker(TorchFunctionMode):
    """Follows the values of each input through torch calls and records where they reach Python."""

    def __init__(self, inputs: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.origins: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensor -> the input positions it came from
        for position, tensor in enumerate(inputs):
            if isinstance(tensor, torch.Tensor):
                self.origins[tensor] = frozenset({position})
        self.reads: dict[int, list[str]] = {}
        # tensor -> the input positions whose values its size depends on (a nonzero's result, and what follows)
        self.sized: WeakIdKeyDictionary = WeakIdKeyDictionary()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        arguments = _tensors((args, kwargs))
        origins = frozenset().union(*(self.origins.get(t, frozenset()) for t in arguments))
        if not origins:
            return result
        name = getattr(func, "__name__", "")
        sized = frozenset().union(*(self.sized.get(t, frozenset()) for t in arguments))
        if name in VALUE_READS:
            self._read(origins)
        elif sized and _reads_a_size(func, name):
            self._read(sized)
        if _size_from_values(name, args, kwargs):
            sized |= origins
        for tensor in _tensors(result):
            self.origins[tensor] = self.origins.get(tensor, frozenset()) | origins
            if sized:
                self.sized[tensor] = self.sized.get(tensor, frozenset()) | sized
        if args and isinstance(args[0], torch.Tensor) and (name in IN_PLACE_WRITES or name.endswith("_")
                                                             and not name.startswith("__")):
            self.origins[args[0]] = self.origins.get(args[0], frozenset()) | origins
        return result

    def _read(self, positions: frozenset[int]) -> None:
        line = _user_line(3)
        for position in positions:
            lines = self.reads.setdefault(position, [])
            if line and line not in lines:
                lines.append(line)


def _reads_a_size(func: object, name: str) -> bool:
    """``len(t)``, ``t.size()``, ``t.numel()`` or ``t.shape``."""
    return name in SIZE_READS or (name == "__get__" and getattr(getattr(func, "__self__", None), "__name__", "")
                                  == "shape")


def _size_from_values(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether this call's result is as long as some of its inputs' values say (``x[mask]`` among them)."""
    if name in DATA_DEPENDENT_SIZES or (name == "where" and len(args) + len(kwargs) == 1):
        return True
    if name == "__getitem__" and len(args) == 2:
        index = args[1] if isinstance(args[1], tuple) else (args[1],)
        return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in index)
    return False


def integer_inputs_read(module: torch.nn.Module, inputs: Sequence[torch.Tensor], names: Sequence[str]
                        ) -> dict[int, str]:
    """Position -> name of each integer input whose values forward() reads into Python: a count
    of graphs, images or boxes computed from them (``int(batch.max()) + 1``) is a size the
    other sizes must vary too. One eager run, only where there is an integer input."""
    integer = [p for p, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.numel() > 0
               and not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)]
    if not integer:
        return {}
    reads = input_value_reads(module, inputs)
    return {p: names[p] if p < len(names) else f"input {p}" for p in integer if reads.get(p)}
