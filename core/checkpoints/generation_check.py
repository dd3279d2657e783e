"""Check a decoder the way it generates: greedy decoding through the exported prefill and decode
components in ONNX Runtime, each decode step fed the cache ONNX Runtime itself returned, against
torch's greedy ``generate()`` from the same prompt.

One export at one shape says little about generation: a decode exported at past length 7 may fail
at past length 8. So the prompts differ from the traced example in batch size and length, and each
decodes K tokens (past lengths prompt .. prompt+K-1). The per-step inputs that do not depend on the
tokens (attention mask, positions) are the ones torch's generate() passed at that step, captured
with transformers' exporter's own forward capture; the token ids and the cache are ONNX Runtime's.
"""
from __future__ import annotations

import copy
import dataclasses
import gc
from typing import Any

import numpy as np
import onnx
import torch

from fixport.core.checkpoints.checkpoint_export import written_component
from fixport.core.foundation.checkpoints.inputs import TEXT_INPUT, ExampleSizes, example_inputs
from fixport.core.foundation.low_precision import LOW_PRECISION, in_float32, widened_input
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.onnx_model import OnnxModel, beside_file
from fixport.core.onnx_io.ort_session import ORT_LOG_FATAL_ONLY, create_session
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.generation_result import DECODE, PREFILL, GenerationCheck, GenerationRun
from fixport.core.records.results import ModelRequest
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled, report, within
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

GENERATED_TOKENS = 8
# Other batch sizes and lengths than the traced example's (2 x 7): past lengths 4-11 and 9-16.
GENERATION_PROMPTS = (ExampleSizes(batch=1, sequence=4), ExampleSizes(batch=3, sequence=9))
INPUT_PREFIX, OUTPUT_PREFIX = "input.", "output."
LOGITS = "logits"
GENERATION_KIND = "generation::greedy"
GENERATION_FRACTION = 0.97


def generation_components(loaded: LoadedModel) -> bool:
    """Whether the loaded checkpoint generates through a prefill and a decode component."""
    info = loaded.checkpoint
    return info is not None and {PREFILL, DECODE} <= set(info.components)


def check_generation(loaded: LoadedModel, components: dict[str, OnnxModel], exporter: str,
                     tokens: int = GENERATED_TOKENS, progress: ProgressCallback | None = None,
                     cancelled: CancelCallback | None = None) -> GenerationCheck:
    """Greedy decoding of ``tokens`` tokens per prompt through ``components`` ({"prefill", "decode"}: ONNX),
    reporting each run (a real-size model takes minutes here, and the worker stops a job that goes silent)."""
    info = loaded.checkpoint
    check = GenerationCheck(exporter=exporter, tokens=tokens)
    prompts = [example_inputs(info.model, info.config, sizes, for_generation=True, seed=seed + 1)
               for seed, sizes in enumerate(GENERATION_PROMPTS)]
    # torch's own run first, then one session at a time: every prompt's prefill, then every prompt's
    # decode steps, so the two components' weights are never held at once. The float32 run comes last,
    # once the sessions are gone, and only for a low-precision prompt whose tokens parted, up to the
    # parting step: it is the verdict's reference there, and where the tokens are identical there is
    # nothing to judge (at 1.5 B parameters each float32 step widens every weight: 3.4 s, against 0.6 s
    # in bfloat16).
    decodings = []
    for number, prompt in enumerate(prompts, 1):
        report(progress, GENERATION_FRACTION, f"torch's greedy decoding, prompt {number} of {len(prompts)}")
        check_cancelled(cancelled)
        decodings.append(_torch_generation(info.model, prompt, tokens))
    for name, steps in ((PREFILL, range(1)), (DECODE, range(1, tokens))):
        report(progress, GENERATION_FRACTION, f"opening the {name} component in ONNX Runtime")
        session = create_session(components[name], "cpu", log_severity=ORT_LOG_FATAL_ONLY).session
        for number, decoding in enumerate(decodings, 1):
            for step in steps:
                report(progress, GENERATION_FRACTION, f"ONNX Runtime's {name}, prompt {number} of {len(decodings)}"
                       + (f", step {step} of {tokens - 1}" if name == DECODE else ""))
                check_cancelled(cancelled)
                if not decoding.step(session, step):
                    break
        del session
        gc.collect()
    dtype = _low_precision(info.model)
    for number, (prompt, decoding) in enumerate(zip(prompts, decodings), 1):
        parted = decoding.run.first_difference
        if dtype and parted is not None and not decoding.run.error:
            report(progress, GENERATION_FRACTION, f"torch's greedy decoding in float32 up to step {parted}, prompt "
                                                  f"{number} of {len(prompts)} (ONNX Runtime's tokens parted there)")
            check_cancelled(cancelled)
            float32_run = _float32_generation(info.model, prompt, parted + 1)
            if float32_run is not None:
                _against_float32(decoding.run, decoding.torch_logits, decoding.onnx_logits, dtype, *float32_run)
        check.runs.append(decoding.run)
    return check


def generation_with_other_component(model: ModelRequest, request_options: dict[str, Any], mappings: list[FixMapping],
                                    loaded: LoadedModel, options: ExportOptions, exported: OnnxModel,
                                    cancelled: CancelCallback | None, output: str | None = None,
                                    progress: ProgressCallback | None = None) -> GenerationCheck:
    """This component's export and the other one's, decoding greedily against torch: the other one as an
    earlier export wrote it into ``output`` (the pair the user deploys), else exported now with the same fixes."""
    from fixport.core.exporters.choice import exporter_for, resolved_export_options
    from fixport.core.loaders.model_cache import open_model

    component = loaded.checkpoint.component
    other_name = DECODE if component == PREFILL else PREFILL
    written = written_component(loaded, output, other_name)
    if written is not None:
        other_model = beside_file(onnx.load(str(written), load_external_data=False), written)
        check = check_generation(loaded, {component: exported, other_name: other_model}, options.exporter,
                                 progress=progress, cancelled=cancelled)
        check.written = str(written)
        return check
    report(progress, GENERATION_FRACTION, f"loading the {other_name} component")
    other = open_model(dataclasses.replace(model, component=other_name))
    other_options = resolved_export_options(other.settings, request_options)
    exporter = exporter_for(other_options.exporter)
    with exporter.fixes_applied(mappings, other_options) as custom_opsets:
        other_options.custom_opsets = {**custom_opsets, **other_options.custom_opsets}
        other_result = exporter.export(other, other_options, run_check=False, cancelled=cancelled,
                                       progress=within(progress, GENERATION_FRACTION, f"exporting the {other_name} "
                                                                                      "component"))
    try:
        if not other_result.ok:
            kinds = ", ".join(sorted({p.display_kind for p in other_result.unsupported}))
            return GenerationCheck(options.exporter, GENERATED_TOKENS,
                                   note=f"not run: the {other_name} component does not export cleanly ({kinds}); "
                                        f"check it with --component {other_name}.")
        return check_generation(loaded, {component: exported, other_name: other_result.model}, options.exporter,
                                progress=progress, cancelled=cancelled)
    finally:
        other_result.model.release()


def generation_problem(check: GenerationCheck) -> UnsupportedNode:
    """A generation that leaves torch's tokens (or fails in ONNX Runtime) as one problem of the export."""
    failed = any(run.error for run in check.runs)
    return UnsupportedNode(kind=GENERATION_KIND, instance="greedy decoding",
                           reason=ProblemReason.RUNTIME_ERROR if failed else ProblemReason.MISMATCH,
                           message=" ".join(check.lines()) + " Check the decode component at those past lengths "
                           "(--component decode) and compare it with torch.", scope="", source="")


def _low_precision(model: torch.nn.Module) -> str:
    """"bfloat16" or "float16" for a model whose floating weights are in that dtype, else ""."""
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    return str(dtype).removeprefix("torch.") if dtype in LOW_PRECISION else ""


def _float32_generation(model: torch.nn.Module, prompt: dict[str, Any], tokens: int
                        ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]] | None:
    """torch's greedy tokens and logits for ``prompt`` in float32 (the weights widened exactly), or
    None for a model that refuses float32."""
    wide = {name: widened_input(value) for name, value in copy.deepcopy(prompt).items()}
    try:
        generated = in_float32(model, lambda: model.generate(**wide, generation_config=_greedy_config(model, tokens)))
    except Exception:  # noqa: BLE001 -- a model that refuses float32: the check stays the plain one
        return None
    start = generated.sequences.shape[1] - len(generated.logits)
    return generated.sequences[:, start:], generated.logits


def _against_float32(run: GenerationRun, torch_logits: tuple[torch.Tensor, ...], onnx_logits: list[np.ndarray],
                     dtype: str, float32_tokens: torch.Tensor, float32_logits: tuple[torch.Tensor, ...]) -> None:
    """The step where torch's own low-precision run parts from its float32 one, their logit differences
    up to there, and ONNX Runtime's logits against the float32 run's while all three share their tokens."""
    run.low_precision = dtype
    run.float32_tokens = float32_tokens.tolist()
    steps = min(len(run.torch_tokens[0]) if run.torch_tokens else 0, len(run.float32_tokens[0]))
    for step in range(steps):
        own = torch.tensor([row[step] for row in run.torch_tokens])
        wide = torch.tensor([row[step] for row in run.float32_tokens])
        if step < len(torch_logits) and step < len(float32_logits):
            difference = (torch_logits[step].float() - float32_logits[step].float()).abs().max()
            run.float32_logit_difference.append(float(difference))
        if not torch.equal(own, wide):
            run.torch_parts_from_float32 = step
            break
    shared = min(len(onnx_logits), len(float32_logits), len(run.float32_logit_difference))
    for step in range(shared):  # ONNX Runtime's tokens equal torch's before its last step, float32's before this
        exact = float32_logits[step].float().numpy()
        run.onnx_float32_logit_difference.append(float(np.abs(onnx_logits[step] - exact).max()))


@dataclasses.dataclass
class _Decoding:
    """One prompt's greedy decoding: torch's generate() (its tokens, logits and the inputs it passed at
    each step), and ONNX Runtime's decoding of it so far, one step at a time."""

    run: GenerationRun
    torch_logits: tuple[torch.Tensor, ...]
    step_inputs: list[dict[str, torch.Tensor]]
    torch_tokens: torch.Tensor
    previous: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    onnx_logits: list[np.ndarray] = dataclasses.field(default_factory=list)
    onnx_token: np.ndarray | None = None
    finished: bool = False

    def step(self, session: Any, step: int) -> bool:
        """Decode ``step`` through ``session``; False once the tokens part or ONNX Runtime fails."""
        if self.finished or step >= len(self.step_inputs):
            return False
        run = self.run
        try:
            feed = _feed(session, self.step_inputs[step], self.previous, self.onnx_token)
            names = [output.name for output in session.get_outputs()]
            outputs = dict(zip(names, session.run(None, feed)))
        except Exception as exc:  # noqa: BLE001 -- ONNX Runtime's failure is the finding
            run.first_difference, run.error = step, str(exc).splitlines()[0][:300]
            self.finished = True
            return False
        self.previous = {name.removeprefix(OUTPUT_PREFIX): value for name, value in outputs.items()}
        logits = self.previous[LOGITS][:, -1, :]
        self.onnx_logits.append(logits.astype(np.float32))
        self.onnx_token = logits.argmax(-1)
        expected = self.torch_logits[step].float().numpy()
        run.max_logit_difference.append(float(np.abs(logits.astype(np.float32) - expected).max()))
        for row, token in enumerate(self.onnx_token.tolist()):
            run.onnx_tokens[row].append(int(token))
        if not np.array_equal(self.onnx_token, self.torch_tokens[:, step].numpy()):
            run.first_difference = step
            self.finished = True
        return not self.finished


def _torch_generation(model: torch.nn.Module, prompt: dict[str, Any], tokens: int) -> _Decoding:
    """torch's greedy generate() from ``prompt``, with the inputs it passed at each step, ready for
    ONNX Runtime to decode the same prompt."""
    from transformers.exporters.utils import _capture_forward, get_leaf_tensors

    with torch.no_grad(), _capture_forward(model) as calls:
        generated = model.generate(**copy.deepcopy(prompt), generation_config=_greedy_config(model, tokens))
    prompt_ids = prompt[TEXT_INPUT] if TEXT_INPUT in prompt else None
    start = prompt_ids.shape[1] if prompt_ids is not None and not model.config.is_encoder_decoder else \
        generated.sequences.shape[1] - len(generated.logits)
    torch_tokens = generated.sequences[:, start:]
    batch = int(torch_tokens.shape[0])
    encoder_length = int(prompt_ids.shape[1]) if prompt_ids is not None and model.config.is_encoder_decoder else 0
    run = GenerationRun(batch=batch, prompt_length=int(start), torch_tokens=torch_tokens.tolist(),
                        onnx_tokens=[[] for _ in range(batch)], max_logit_difference=[],
                        encoder_length=encoder_length)
    step_inputs = [get_leaf_tensors(call) for call in calls[:tokens]]
    return _Decoding(run, generated.logits, step_inputs, torch_tokens)


def _feed(session: Any, leaves: dict[str, torch.Tensor], previous: dict[str, np.ndarray],
          onnx_token: np.ndarray | None) -> dict[str, np.ndarray]:
    """The session's inputs: its own cache and token after the prefill, torch's step inputs for the rest."""
    feed = {}
    for spec in session.get_inputs():
        path = spec.name.removeprefix(INPUT_PREFIX)
        if onnx_token is not None and path in previous and path != LOGITS:
            feed[spec.name] = previous[path]
        elif onnx_token is not None and path in (TEXT_INPUT, "decoder_input_ids"):
            feed[spec.name] = onnx_token.reshape(-1, 1).astype(leaves[path].numpy().dtype)
        elif path in leaves:
            feed[spec.name] = leaves[path].numpy()
        else:
            raise ValueError(f"the exported graph takes {spec.name}, which generate() did not pass at this step")
    return feed


def _greedy_config(model: torch.nn.Module, tokens: int) -> Any:
    """The model's generation config as plain greedy decoding of exactly ``tokens`` tokens: no sampling,
    no end of sequence, no processor changing the logits (ONNX Runtime's tokens are their argmax)."""
    config = copy.deepcopy(model.generation_config)
    config.update(do_sample=False, num_beams=1, max_new_tokens=tokens, min_new_tokens=None, eos_token_id=None,
                  repetition_penalty=None, no_repeat_ngram_size=None, temperature=None, top_k=None, top_p=None,
                  suppress_tokens=None, begin_suppress_tokens=None, bad_words_ids=None, forced_bos_token_id=None,
                  forced_eos_token_id=None, max_length=None, return_dict_in_generate=True, output_logits=True)
    if config.pad_token_id is None:
        config.pad_token_id = 0
    return config
