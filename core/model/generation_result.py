"""What the generation check found: the exported prefill and decode components decoding greedily in
ONNX Runtime against torch's greedy generate() from the same prompts (no torch import)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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

    @property
    def identical(self) -> bool:
        return self.first_difference is None and not self.error

    @property
    def past_lengths(self) -> list[int]:
        """The cache lengths the decode steps ran with."""
        return [self.prompt_length + step - 1 for step in range(len(self.max_logit_difference)) if step > 0]


@dataclass
class GenerationCheck:
    """Every prompt's run, and the exporter the components were exported with."""

    exporter: str
    tokens: int
    runs: list[GenerationRun] = field(default_factory=list)
    note: str = ""  # why it could not run, where it could not

    @property
    def passed(self) -> bool:
        return bool(self.runs) and all(run.identical for run in self.runs)

    def to_json(self) -> dict[str, Any]:
        """In `check --json` and `compare --json`: every prompt's run."""
        return {"exporter": self.exporter, "tokens": self.tokens, "passed": self.passed, "note": self.note,
                "runs": [{**asdict(run), "identical": run.identical, "past_lengths": run.past_lengths}
                         for run in self.runs]}

    def lines(self) -> list[str]:
        """The report: per prompt, the tokens (identical, or the first step that differs), the largest
        logit difference per step, and the batch sizes and past lengths covered."""
        if self.note:
            return [f"Generation check: {self.note}"]
        batches = sorted({run.batch for run in self.runs})
        pasts = sorted({past for run in self.runs for past in run.past_lengths})
        verdict = "same tokens as torch" if self.passed else "tokens differ from torch"
        lines = [f"Generation check ({self.exporter}): greedy decode of {self.tokens} tokens through the exported "
                 f"prefill and decode in ONNX Runtime, {verdict}; batch sizes {', '.join(map(str, batches))}, "
                 f"past lengths {_span(pasts)}."]
        for run in self.runs:
            steps = ", ".join(f"{d:.1e}" for d in run.max_logit_difference)
            if run.error:
                outcome = f"ONNX Runtime failed at step {run.first_difference}: {run.error}"
            elif run.first_difference is None:
                outcome = "identical tokens"
            else:
                outcome = (f"first difference at step {run.first_difference} "
                           f"(torch {_column(run.torch_tokens, run.first_difference)}, "
                           f"ONNX Runtime {_column(run.onnx_tokens, run.first_difference)})")
            encoder = f" after an encoder input of {run.encoder_length}" if run.encoder_length else ""
            lines.append(f"  batch {run.batch}, prompt {run.prompt_length}{encoder}: {outcome}; largest logit "
                         f"difference per step: {steps}")
        return lines


def _span(values: list[int]) -> str:
    return f"{values[0]}-{values[-1]}" if values else "none"


def _column(tokens: list[list[int]], step: int) -> list[int]:
    return [row[step] for row in tokens if step < len(row)]
