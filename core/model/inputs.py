"""Where example inputs come from: ``--input NAME=1x3x224x224[:float32]`` specs and input files."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fixport.core.model.errors import InputSpecError

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
