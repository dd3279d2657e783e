"""What the generation check found: the exported prefill and decode components decoding greedily in
ONNX Runtime against torch's greedy generate() from the same prompts (no torch import).

A float16 or bfloat16 decoder whose tokens part from torch's is also decoded by torch in float32 (its
weights widened, exactly), up to the parting step; identical tokens need no such reference:
greedy tokens of a low-precision model follow its rounding, so where ONNX Runtime's tokens part
from torch's own low-precision run at or after the step where that run itself parts from float32,
the parting is the precision's rounding, not the export's (the verdict the output checks use,
held to the same float32 run, core/checks/low_precision.py). Where torch's own run keeps float32's
tokens, a parting is still rounding when, at every step up to it, ONNX Runtime's logits are no further
from the float32 run's than ROUNDING_MARGIN times torch's own: two tokens within rounding of each other,
which torch's rounding happened to order like float32's (a random or undertrained model's flat logits).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PREFILL, DECODE = "prefill", "decode"  # the components a decoder generates through
ROUNDING_MARGIN = 2.0  # the output checks' margin (core/foundation/low_precision.py; a test keeps them equal)


@dataclass
class GenerationRun:
    """One prompt: K greedy tokens through ONNX Runtime and through torch."""

    batch: int
    prompt_length: int
    torch_tokens: list[list[int]]  # per row
    onnx_tokens: list[list[int]]
    max_logit_difference: list[float]  # per step, up to the first step whose tokens differ
    first_difference: int | None = None  # the step (0: the prefill's token) where a row's token differs
    error: str = ""  # ONNX Runtime failed at the first_difference step
    encoder_length: int = 0  # an encoder-decoder's encoded input (prompt_length is then the decoder's start)
    # A float16/bfloat16 model only (low_precision names the dtype): torch's greedy run in float32, the
    # step where torch's own low-precision run parts from it (None: never, within the K tokens), and
    # the largest logit difference between those two runs per step, up to that step.
    low_precision: str = ""
    float32_tokens: list[list[int]] = field(default_factory=list)
    torch_parts_from_float32: int | None = None
    float32_logit_difference: list[float] = field(default_factory=list)
    # ONNX Runtime's logits against the float32 run's per step, up to the parting step (same tokens before).
    onnx_float32_logit_difference: list[float] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.first_difference is None and not self.error

    @property
    def rounding_only(self) -> bool:
        """ONNX Runtime parts from torch's low-precision tokens only where torch's own low-precision run
        had already parted from float32 (at that step or before): the dtype's rounding, not the export."""
        return (bool(self.low_precision) and not self.error and self.first_difference is not None
                and ((self.torch_parts_from_float32 is not None
                      and self.torch_parts_from_float32 <= self.first_difference)
                     or self.as_close_to_float32_as_torch))

    @property
    def as_close_to_float32_as_torch(self) -> bool:
        """Up to and at the parting step, ONNX Runtime's logits are as close to the float32 run's as
        torch's own low-precision logits are (within ROUNDING_MARGIN): the tokens it parts on are
        within the dtype's rounding of each other."""
        step = self.first_difference
        if step is None or len(self.onnx_float32_logit_difference) <= step \
                or len(self.float32_logit_difference) <= step:
            return False
        return all(onnx <= ROUNDING_MARGIN * own for onnx, own in
                   zip(self.onnx_float32_logit_difference[:step + 1], self.float32_logit_difference[:step + 1]))

    @property
    def passed(self) -> bool:
        return self.identical or self.rounding_only

    @property
    def past_lengths(self) -> list[int]:
        """The cache lengths the decode steps ran with."""
        return [self.prompt_length + step - 1 for step in range(len(self.max_logit_difference)) if step > 0]

    def outcome(self) -> str:
        """Identical tokens, or the step where they part (and both tokens), and, in low precision,
        where torch's own run parts from float32."""
        if self.error:
            return f"ONNX Runtime failed at step {self.first_difference}: {self.error}"
        if self.first_difference is None:
            text = "identical tokens"
        else:
            step = self.first_difference
            text = (f"tokens part at step {step} (torch {_column(self.torch_tokens, step)}, "
                    f"ONNX Runtime {_column(self.onnx_tokens, step)})")
        if not self.low_precision:
            return text
        dtype, parted = self.low_precision, self.torch_parts_from_float32
        step = self.first_difference
        torch_parted_first = parted is not None and step is not None and parted <= step
        if self.rounding_only and not torch_parted_first:
            own = self._keeps_float32() if parted is None else f"parts from float32 at step {parted}"
            return (f"{text}; torch's own {dtype} run {own}, but there ONNX Runtime's logits are "
                    f"{self.onnx_float32_logit_difference[step]:.1e} from the float32 run's and torch's own "
                    f"{dtype} run's {self.float32_logit_difference[step]:.1e}: two tokens within {dtype} rounding "
                    f"of each other, {dtype} rounding, not the export")
        if parted is None:
            return f"{text}; torch's own {dtype} run {self._keeps_float32()}"
        own = f"torch's own {dtype} run parts from float32 at step {parted}"
        if self.rounding_only:
            return f"{text}, where {own}: {dtype} rounding, not the export"
        return f"{text}; {own}"

    def _keeps_float32(self) -> str:
        """Where torch's own low-precision run never parts from float32 within the float32 run, which
        stops at the step where ONNX Runtime parted (no later step bears on the verdict)."""
        compared = min((len(row) for row in self.float32_tokens), default=0)
        if compared >= min((len(row) for row in self.torch_tokens), default=0):
            return "keeps float32's tokens throughout"
        return f"keeps float32's tokens through step {compared - 1}"


@dataclass
class GenerationCheck:
    """Every prompt's run, and the exporter the components were exported with."""

    exporter: str
    tokens: int
    runs: list[GenerationRun] = field(default_factory=list)
    note: str = ""  # why it could not run, where it could not
    written: str = ""  # the other component's file, as an earlier export wrote it (else exported afresh)

    @property
    def passed(self) -> bool:
        return bool(self.runs) and all(run.passed for run in self.runs)

    @property
    def rounding_only(self) -> bool:
        """Passed, with tokens that part from torch's only by the low-precision rounding."""
        return self.passed and any(run.rounding_only for run in self.runs)

    def to_json(self) -> dict[str, Any]:
        """In `check --json` and `compare --json`: every prompt's run."""
        return {"exporter": self.exporter, "tokens": self.tokens, "passed": self.passed, "note": self.note,
                "rounding_only": self.rounding_only, "written_component": self.written,
                "runs": [{**asdict(run), "identical": run.identical, "rounding_only": run.rounding_only,
                          "past_lengths": run.past_lengths} for run in self.runs]}

    def lines(self, tokens: bool = False) -> list[str]:
        """The report: per prompt, the tokens (identical, or the first step that differs), the largest
        logit difference per step, and the batch sizes and past lengths covered; with ``tokens``, each
        row's tokens from torch, ONNX Runtime and (in low precision) torch in float32."""
        if self.note:
            return [f"Generation check: {self.note}"]
        batches = sorted({run.batch for run in self.runs})
        pasts = sorted({past for run in self.runs for past in run.past_lengths})
        if not self.passed:
            verdict = "tokens differ from torch"
        elif self.rounding_only:
            dtype = next(run.low_precision for run in self.runs if run.rounding_only)
            verdict = f"tokens part from torch's only where {dtype} rounding parts torch from float32 too"
        else:
            verdict = "same tokens as torch"
        through = (f"this export and {self.written} as written" if self.written
                   else "the exported prefill and decode")
        lines = [f"Generation check ({self.exporter}): greedy decode of {self.tokens} tokens through {through} "
                 f"in ONNX Runtime, {verdict}; batch sizes {', '.join(map(str, batches))}, "
                 f"past lengths {_span(pasts)}."]
        for run in self.runs:
            encoder = f" after an encoder input of {run.encoder_length}" if run.encoder_length else ""
            lines.append(f"  batch {run.batch}, prompt {run.prompt_length}{encoder}: {run.outcome()}; largest logit "
                         f"difference per step: {_steps(run.max_logit_difference)}"
                         + (f"; torch {run.low_precision} against float32: {_steps(run.float32_logit_difference)}"
                            if run.low_precision else ""))
            if tokens:
                lines.extend(_token_lines(run))
        return lines


def _steps(differences: list[float]) -> str:
    return ", ".join(f"{d:.1e}" for d in differences) or "none"


def _token_lines(run: GenerationRun) -> list[str]:
    lines = []
    for row, torch_row in enumerate(run.torch_tokens):
        runs = [("torch", torch_row), ("ONNX Runtime", run.onnx_tokens[row] if row < len(run.onnx_tokens) else [])]
        if run.float32_tokens:
            runs.append(("torch float32", run.float32_tokens[row]))
        lines.append(f"    row {row}: " + "; ".join(f"{name} {' '.join(map(str, values))}" for name, values in runs))
    return lines


def _span(values: list[int]) -> str:
    return f"{values[0]}-{values[-1]}" if values else "none"


def _column(tokens: list[list[int]], step: int) -> list[int]:
    return [row[step] for row in tokens if step < len(row)]
