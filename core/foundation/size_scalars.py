"""Sizes computed with tensor ops, kept symbolic while torch.export captures (issue 46).

Libraries keep small integer constants as 0-d buffers (``nn.Buffer(torch.tensor(stride),
persistent=False)``) and compute a size with tensor arithmetic on them and a tensor's length::

    n_frames = (length - self.kernel_size + self.padding_total) / self.stride + 1
    n_frames = torch.ceil(n_frames).to(torch.int64) - 1
    extra = n_frames * self.stride + self.kernel_size - self.padding_total - length
    F.pad(x, (left, extra))

(transformers' EnCodec). torch.export turns the tensor into an unbacked value at ``F.pad``, with no
relation to the length, and the capture stops on a guard. :class:`SizeScalars` follows each 0-d
tensor made only of sizes and such constants, in exact integer arithmetic on the capture's symbolic
sizes (``/`` a fraction until ``ceil``, ``floor`` or ``.to(int)`` makes it whole), and where the
code reads it as a number (``int``, ``.item()``, a comparison's ``bool``, a size in a list such as
``F.pad``'s) gives the symbolic size itself: the capture keeps the length dynamic. The tensors
themselves are computed as before, so everything else the code does with them is unchanged.

``range`` over sizes whose count the sizes decide (``range(0, length, length)``, a loop over chunks
where a chunk is the whole input) gives the symbolic starts instead of pinning the length; it is
set in the model code's modules for the capture only (not torch's builtins: TorchDynamo, which
torch.export runs for the RNN decompositions, reads those).

Applied by the capture setting ``size_scalars`` in Fixport and in the fix script alike.
"""
from __future__ import annotations

import operator
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_ADD = frozenset({"add", "__add__", "__radd__", "add_"})
_SUB = frozenset({"sub", "__sub__", "subtract"})
_MUL = frozenset({"mul", "__mul__", "__rmul__", "multiply"})
_DIV = frozenset({"div", "__truediv__", "true_divide", "divide"})
_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "lt": operator.lt, "__lt__": operator.lt, "le": operator.le, "__le__": operator.le,
    "gt": operator.gt, "__gt__": operator.gt, "ge": operator.ge, "__ge__": operator.ge,
    "eq": operator.eq, "__eq__": operator.eq, "ne": operator.ne, "__ne__": operator.ne}
_READS = frozenset({"item", "__index__", "__int__", "__bool__", "tolist"})
_FACTORIES = frozenset({"tensor", "as_tensor", "scalar_tensor"})
_WHOLE = frozenset({"to", "long", "int", "floor", "trunc"})  # to an integer dtype truncates; sizes are >= 0 here


@dataclass(frozen=True)
class Ratio:
    """``num / den``: integers or symbolic sizes, exact (a division stays a fraction until made whole)."""

    num: Any
    den: Any = 1

    def plus(self, other: Ratio, sign: int = 1) -> Ratio:
        return Ratio(self.num * other.den + sign * other.num * self.den, self.den * other.den)

    def floor(self) -> Ratio:
        return self if _is_one(self.den) else Ratio(self.num // self.den)

    def ceil(self) -> Ratio:
        # not -(-num // den): ONNX's integer Div truncates, so a floor division of a negative size exports wrong
        if _is_one(self.den):
            return self
        positive = isinstance(self.den, int) and self.den > 0
        return Ratio((self.num + self.den - 1) // self.den) if positive else Ratio(-((-self.num) // self.den))


@dataclass(frozen=True)
class Truth:
    """A comparison of sizes: a bool or a symbolic one."""

    value: Any


def _is_one(value: Any) -> bool:
    return isinstance(value, int) and value == 1


def _is_integer_scalar(tensor: torch.Tensor) -> bool:
    return tensor.dim() == 0 and not tensor.dtype.is_floating_point and not tensor.dtype.is_complex \
        and tensor.dtype != torch.bool


def constant_integer_buffers(model: torch.nn.Module) -> dict[torch.nn.Module, dict[str, int]]:
    """Each part's 0-d integer buffers kept out of its state (``persistent=False``): constants of its code."""
    found: dict[torch.nn.Module, dict[str, int]] = {}
    for module in model.modules():
        names = {name: int(buffer) for name, buffer in module._buffers.items()
                 if buffer is not None and name in module._non_persistent_buffers_set
                 and _is_integer_scalar(buffer) and not getattr(buffer, "fake_mode", None)}
        if names:
            found[module] = names
    return found


class SizeScalars(TorchFunctionMode):
    """Follows 0-d tensors computed from sizes and constant buffers while the block runs (see the module)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self._model = model
        self._known: dict[int, tuple[weakref.ref, Ratio | Truth]] = {}
        self._hooks: list[Any] = []

    def __enter__(self) -> SizeScalars:
        # torch.export swaps fake buffers in before forward runs: each part's are known from its call on
        for module, values in constant_integer_buffers(self._model).items():
            self._hooks.append(module.register_forward_pre_hook(
                lambda part, _args, values=values: self._know_buffers(part, values)))
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
        self._known.clear()
        super().__exit__(*exc)

    def _know_buffers(self, part: torch.nn.Module, values: dict[str, int]) -> None:
        for name, value in values.items():
            tensor = part._buffers.get(name)
            if tensor is not None:
                self._remember(tensor, Ratio(value))

    def _remember(self, tensor: torch.Tensor, value: Ratio | Truth) -> None:
        self._known[id(tensor)] = (weakref.ref(tensor), value)

    def _known_value(self, value: Any) -> Ratio | Truth | None:
        if isinstance(value, torch.Tensor):
            entry = self._known.get(id(value))
            return entry[1] if entry is not None and entry[0]() is value else None
        if isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool):
            return Ratio(value)
        return None

    def _as_size(self, value: Any) -> Any:
        """A followed whole tensor as its size; anything else as it is."""
        known = self._known_value(value) if isinstance(value, torch.Tensor) else None
        return known.num if isinstance(known, Ratio) and _is_one(known.den) else value

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _READS and args and isinstance(args[0], torch.Tensor):
            read = self._read(name, args[0])
            if read is not None:
                return read
        if self._known and any(isinstance(a, (tuple, list)) for a in args):  # a size list (F.pad's, view's)
            args = tuple(type(a)(self._as_size(v) for v in a) if isinstance(a, (tuple, list)) else a for a in args)
        result = func(*args, **kwargs)
        if isinstance(result, torch.Tensor) and result.dim() == 0 and (self._known or name in _FACTORIES):
            value = self._made(name, args, result) if name in _FACTORIES else self._computed(name, args, kwargs)
            if value is not None:
                self._remember(result, value)
        return result

    def _read(self, name: str, tensor: torch.Tensor) -> Any:
        known = self._known_value(tensor)
        if isinstance(known, Truth):
            return bool(known.value) if name == "__bool__" else known.value
        if isinstance(known, Ratio) and _is_one(known.den) and name != "__bool__":
            return known.num
        return None

    @staticmethod
    def _made(name: str, args: tuple, result: torch.Tensor) -> Ratio | None:
        """``torch.tensor(size)`` and the like: a size as an integer tensor."""
        whole = args and isinstance(args[0], (int, torch.SymInt)) and not isinstance(args[0], bool)
        return Ratio(args[0]) if whole and _is_integer_scalar(result) else None

    def _computed(self, name: str, args: tuple, kwargs: dict) -> Ratio | Truth | None:
        """The exact value of ``name(*args)`` where every operand is a size, a constant or followed."""
        if not any(isinstance(a, torch.Tensor) and self._known_value(a) is not None for a in args):
            return None
        if name in _WHOLE and name != "to" and (len(args) != 1 or kwargs):
            return None
        operands = [self._known_value(a) for a in args if not isinstance(a, (torch.dtype, torch.device))]
        if name == "to" and (not any(isinstance(a, torch.dtype) and not a.is_floating_point for a in args)
                             and not isinstance(kwargs.get("dtype"), torch.dtype)):
            return operands[0] if len(operands) == 1 and isinstance(operands[0], Ratio) else None
        if not operands or any(not isinstance(o, Ratio) for o in operands) or kwargs.get("alpha", 1) != 1:
            return None
        if len(operands) == 1:
            if name in _WHOLE:
                return operands[0].floor()
            return operands[0].ceil() if name == "ceil" else None
        if len(operands) != 2 or kwargs.get("rounding_mode") is not None:
            return None
        a, b = operands
        if name == "__rsub__":
            return b.plus(a, -1)
        if name in _ADD:
            return a.plus(b)
        if name in _SUB:
            return a.plus(b, -1)
        if name in _MUL:
            return Ratio(a.num * b.num, a.den * b.den)
        if name in _DIV:
            return Ratio(a.num * b.den, a.den * b.num)
        if name in ("__floordiv__", "floor_divide"):
            return Ratio(a.num * b.den, a.den * b.num).floor()
        if name in ("maximum", "minimum"):
            pick = torch.sym_max if name == "maximum" else torch.sym_min
            return Ratio(pick(a.num * b.den, b.num * a.den), a.den * b.den)
        if name in _COMPARISONS:
            return Truth(_COMPARISONS[name](a.num * b.den, b.num * a.den))
        return None


def size_range(*args: Any) -> Any:
    """``range``, where a bound is a symbolic size and the sizes decide how many steps it takes:
    the starts as symbolic sizes (else Python's own, which pins the sizes to the example's)."""
    if not any(isinstance(a, torch.SymInt) for a in args):
        return range(*args)
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    hinted = [a.node.hint if isinstance(a, torch.SymInt) else a for a in (start, stop, step)]
    if None in hinted or hinted[2] <= 0:
        return range(*args)
    if isinstance(step, torch.SymInt):
        torch._check(step > 0)  # a runtime assertion: Python's range refuses a zero step too
    count = len(range(*hinted))
    if (count == 0 or statically_known_true(start + (count - 1) * step < stop)) \
            and statically_known_true(start + count * step >= stop):
        return [start + i * step for i in range(count)]
    return range(*args)


def _code_modules(model: torch.nn.Module) -> list[Any]:
    """The modules the model's parts are defined in, torch's own left out."""
    names = {type(part).__module__ for part in model.modules()}
    return [sys.modules[name] for name in sorted(names)
            if name in sys.modules and name.split(".")[0] != "torch"]


@contextmanager
def sizes_kept_symbolic(model: torch.nn.Module) -> Iterator[None]:
    """The block (a capture of ``model``) with :class:`SizeScalars` on and :func:`size_range` as
    ``range`` in the model code's modules; everything as it was after."""
    modules = [m for m in _code_modules(model) if "range" not in vars(m)]
    for module in modules:
        module.range = size_range
    try:
        with SizeScalars(model):
            yield
    finally:
        for module in modules:
            if vars(module).get("range") is size_range:
                del module.range
