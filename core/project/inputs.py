"""Where example inputs come from: ``--input NAME=1x3x224x224[:float32]`` specs and input files."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fixport.core.foundation.errors import InputSpecError

_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)=(?P<shape>\d+(?:x\d+)*|scalar)(?::(?P<dtype>\w+))?$")
DTYPE_BYTES = {"float32": 4, "float64": 8, "float16": 2, "int64": 8, "int32": 4, "int8": 1, "uint8": 1, "bool": 1}
SUPPORTED_DTYPES = tuple(DTYPE_BYTES)
# One random input above this is almost surely a typo (1x3x224x224 float32 is 0.6 MB).
MAX_RANDOM_INPUT_BYTES = 4 * 1024**3


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
    if 0 in shape:
        raise InputSpecError(f"The input {text!r} has a zero dimension: it would hold no values to trace.",
                             "Give every dimension at least 1, e.g. x=1x3; mark a dimension dynamic "
                             "with --dynamic-axes instead.")
    size = math.prod(shape) * DTYPE_BYTES[dtype]
    if size > MAX_RANDOM_INPUT_BYTES:
        raise InputSpecError(f"The input {text!r} would allocate {human_bytes(size)} of {dtype} "
                             f"(the limit is {human_bytes(MAX_RANDOM_INPUT_BYTES)}).",
                             "Check the dimensions: a small example input (batch 1) is enough to export.")
    return InputSpec(match["name"], shape, dtype)


def human_bytes(count: float) -> str:
    """1536 -> '1.5 KiB'."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")
    power = 0
    while count >= 1024 and power < len(units) - 1:
        count, power = count / 1024, power + 1
    return f"{count:.0f} bytes" if power == 0 else f"{count:.3g} {units[power]}"
