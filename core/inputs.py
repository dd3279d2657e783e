"""Example inputs: parse ``--input NAME=1x3x224x224[:float32]`` and load ``.npz``/``.pt`` files."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.errors import InputSpecError

_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)=(?P<shape>\d+(?:x\d+)*|scalar)(?::(?P<dtype>\w+))?$")
SUPPORTED_DTYPES = ("float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool")


@dataclass(frozen=True)
class InputSpec:
    """One random input: its name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"

    def text(self) -> str:
        shape = "x".join(map(str, self.shape)) or "scalar"
        return f"{self.name}={shape}:{self.dtype}"


@dataclass
class InputOptions:
    """Where example inputs come from; the model file's own inputs by default."""

    specs: list[InputSpec] = field(default_factory=list)
    input_file: str | None = None
    seed: int = 0


def parse_input_spec(text: str) -> InputSpec:
    match = _SPEC_RE.match(text.strip())
    if not match:
        raise InputSpecError(
            f"Cannot read the input specification {text!r}.",
            "Write it as NAME=DIMS[:DTYPE], for example x=1x3x224x224:float32.",
        )
    dtype = match["dtype"] or "float32"
    if dtype not in SUPPORTED_DTYPES:
        raise InputSpecError(f"Unknown dtype {dtype!r} in {text!r}.",
                             f"Use one of: {', '.join(SUPPORTED_DTYPES)}.")
    shape = () if match["shape"] == "scalar" else tuple(int(d) for d in match["shape"].split("x"))
    return InputSpec(match["name"], shape, dtype)


def random_inputs(specs: list[InputSpec], seed: int) -> dict[str, np.ndarray]:
    """Reproducible random arrays: normal floats, small non-negative ints, random bools."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.dtype.startswith("float"):
            arrays[spec.name] = rng.standard_normal(spec.shape).astype(spec.dtype)
        elif spec.dtype == "bool":
            arrays[spec.name] = rng.random(spec.shape) > 0.5
        else:
            arrays[spec.name] = rng.integers(0, 10, spec.shape).astype(spec.dtype)
    return arrays


def load_input_file(path: str | Path) -> dict[str, np.ndarray]:
    """Named arrays from an ``.npz`` file, or tensors from a ``.pt`` file (dict, list or tensor)."""
    path = Path(path)
    if not path.is_file():
        raise InputSpecError(f"Input file not found: {path}", "Check the path given to --inputs.")
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        if path.suffix == ".pt":
            import torch

            loaded = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(loaded, torch.Tensor):
                loaded = [loaded]
            if isinstance(loaded, (list, tuple)):
                loaded = {f"input_{i}": t for i, t in enumerate(loaded)}
            if isinstance(loaded, dict) and all(isinstance(t, torch.Tensor) for t in loaded.values()):
                return {str(k): t.detach().cpu().numpy() for k, t in loaded.items()}
            raise InputSpecError(f"{path} holds {type(loaded).__name__}, not tensors.",
                                 "Save a tensor, a list of tensors or a dict of tensors with torch.save.")
    except InputSpecError:
        raise
    except Exception as exc:  # corrupt archive, pickled objects, ...
        raise InputSpecError(f"Cannot read inputs from {path}: {exc}",
                             "Save inputs with numpy.savez or torch.save (tensors only).") from exc
    raise InputSpecError(f"Unsupported input file type {path.suffix!r}.", "Use a .npz or .pt file.")
