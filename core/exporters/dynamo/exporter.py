"""The torch.export-based exporter (``torch.onnx.export(dynamo=True)``), the second :class:`Exporter`.

It runs torch's own three steps one at a time (capture with torch's capture strategies,
decompose against the ONNX registry, translate), so one pass can list every problem: each
capture failure (from ``torch.export.draft_export``'s report) with the user's line, every FX
node the registry has no ONNX function for, then what ONNX Runtime refuses.
"""
from __future__ import annotations

import ast
import contextlib
import contextvars
import io
import operator
import re
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import onnx
import torch
from torch.onnx import _constants as onnx_constants
from torch.onnx._internal._lazy_import import onnxscript_apis
from torch.onnx._internal.exporter import (
    _constants,
    _core,
    _dispatching,
    _dynamic_shapes,
    _ir_passes,
    _registration,
)

from fixport.core.exporters.base import (
    ComparableExport,
    Exporter,
    ExportResult,
    NodeSample,
    NodeSamples,
    refuse_onnx_files,
    refuse_unknown_dynamic_axes,
)
from fixport.core.exporters.dynamo.candidates import STRATEGIES, candidates_for, fixable
from fixport.core.exporters.dynamo.capture import FxCapture
from fixport.core.exporters.dynamo.capture_settings import capture_strategies, core_aten_first, grad_mode_for
from fixport.core.exporters.dynamo.code_changes import with_code_changes
from fixport.core.exporters.dynamo.effects import drop_decomposed_checks, without_effect_tokens
from fixport.core.exporters.dynamo.fixes import (
    active_fixes,
    applied_dynamo_mappings,
    apply_decompositions,
    apply_graph_rewrites,
    decompositions_while_preparing,
    register_translations,
)
from fixport.core.exporters.dynamo.mapped_weights import WeightSource, map_from_file, weight_sources
from fixport.core.exporters.dynamo.origins import captured_origin
from fixport.core.exporters.dynamo.placeholders import PLACEHOLDER_OP, register_placeholders
from fixport.core.exporters.dynamo.rewrite_prefilter import multi_output_rules_prefiltered
from fixport.core.exporters.dynamo.rnn_dispatch import rnn_dispatch_afresh
from fixport.core.exporters.dynamo.script_part import (
    node_being_translated,
    shapes_by_parameter,
    suggested_dynamic_shapes,
)
from fixport.core.exporters.dynamo.size_guards import SizeGuards
from fixport.core.exporters.dynamo.source_graph import FX_GRAPH_KIND, fx_to_graph, user_line_of_exception
from fixport.core.exporters.dynamo.specialising_guards import (
    GuardsOnDemand,
    axis_labels,
    pinned_declared_dims,
    recaptured_guards,
)
from fixport.core.exporters.dynamo.strided_weights import write_contiguously
from fixport.core.exporters.profiles import DYNAMO
from fixport.core.exporters.size_shortcuts import changes_for_pinned
from fixport.core.exporters.torch_export.capture_failures import (
    CAPTURE_KIND_PREFIX,
    capture_advice,
    capture_problems_from_report,
    quiet_torch,
    stopping_line_first,
)
from fixport.core.foundation.changed_methods import methods_changed
from fixport.core.foundation.kept_attributes import attributes_kept
from fixport.core.foundation.size_scalars import sizes_kept_symbolic
from fixport.core.loaders.loading import LoadedModel, onnx_output_names
from fixport.core.onnx_io.diagnosis import (
    nodes_without_kernel_for_their_types,
    nodes_without_runtime_kernel,
    runtime_error_problem,
)
from fixport.core.onnx_io.onnx_graph import PROVENANCE_ATTRIBUTE, onnx_to_graph, strip_provenance
from fixport.core.onnx_io.onnx_model import (
    EXPORT_FILE_NAME,
    OnnxModel,
    WeightsFolder,
    on_disk,
    read_export,
    weights_go_to_disk,
)
from fixport.core.onnx_io.op_docs import OpInfo
from fixport.core.onnx_io.opset_needs import opset_that_runs
from fixport.core.onnx_io.ort_session import run_on_cpu
from fixport.core.project.capture_settings import DECIDED_AT_CAPTURE, DRAFT_EXPORT, SIZE_SCALARS, SUGGESTED_DIMS
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import Candidate
from fixport.core.records.requests import StubRequest
from fixport.core.records.results import TracedGraph
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled, report, report_partial
from fixport.core.words.errors import (
    ExportError,
    NothingToCompareError,
    TemplateValidationError,
    TraceError,
    trimmed_message,
)
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import UNPLACED_KIND, ProblemReason
from fixport.symbolics.library import RankedTemplate, TemplateLibrary

FX_NODE_METADATA = "pkg.torch.onnx.name_scopes"  # repr of [module scopes..., FX node name]
_TRANSLATING_NODE_RE = re.compile(r"Error when translating node %(\w+)")
_EXECUTING_TARGET_RE = re.compile(r"While executing %\w+ : .*?target=torch\.ops\.aten\.([\w.]+)")
_SOURCE_FRAME_RE = re.compile(r'File "([^"]+)", line (\d+)')
_GENERATED_WHY = {"dynamo.torchlib_start": "torch_lib's own ONNX function for this op, to edit",
                  "dynamo.stub": "an ONNX function skeleton from the op's schema"}
_CONSTRAINTS_VIOLATED = "Constraints violated"  # torch.export's words for dynamic dims the code specialises
_DIMS_DO_NOT_HOLD = (_CONSTRAINTS_VIOLATED, "conflicts between user-specified ranges and inferred ranges")
_INPUT_DIM_RE = re.compile(r"inputs\[(\d+)\]\.shape\[(\d+)\]")


class DynamoExporter(Exporter):
    """``torch.onnx.export(dynamo=True)``, step by step, with every problem listed at once."""

    profile = DYNAMO
    default_opset = DYNAMO.default_opset or onnx_constants.ONNX_DEFAULT_OPSET  # torch's own: 20 in torch 2.14
    fix_strategies = tuple(STRATEGIES)
    per_node_note = ("Per-node analysis re-exported the model without ONNX optimization, and compared each ONNX "
                     "node group with the FX node it came from (the exporter's node metadata).")
    last_program: torch.export.ExportedProgram | None = None  # the program the last export translated
    last_captured: torch.export.ExportedProgram | None = None  # what it was decomposed from
    last_key: tuple | None = None  # the model, options and fixes the last program was exported with

    def export(self, loaded: LoadedModel, options: ExportOptions, *, diagnose: bool = True,
               run_check: bool = True, progress: ProgressCallback | None = None,
               cancelled: CancelCallback | None = None) -> ExportResult:
        options.validate(self.profile.opsets)
        with grad_mode_for(options):
            return self._export(loaded, options, diagnose=diagnose, run_check=run_check, progress=progress,
                                cancelled=cancelled)

    def _export(self, loaded: LoadedModel, options: ExportOptions, *, diagnose: bool, run_check: bool,
                progress: ProgressCallback | None, cancelled: CancelCallback | None) -> ExportResult:
        refuse_onnx_files(loaded)
        key = _program_key(loaded, options)  # before the export writes the opset it reached into options
        report(progress, 0.05, "capturing with torch.export")
        with quiet_torch(), contextlib.redirect_stderr(io.StringIO()):  # draft_export prints whole graphs
            program, problems = capture(loaded, options)
            if diagnose and any(p.reason == ProblemReason.CAPTURE_FAILED for p in problems):
                report(progress, 0.2, "trying a code change for each capture failure")
                problems = with_code_changes(loaded, problems, lambda: _still_failing(loaded, options))
            check_cancelled(cancelled)
            if program is None:
                return ExportResult(onnx.ModelProto(), Graph(FX_GRAPH_KIND), Graph("onnx"), problems)  # type: ignore[arg-type]
            captured = program  # its guards: the sizes the export holds for
            pinned_at = _pinned_at(loaded, options, program) if run_check else []
            on_demand = _guards_on_demand(loaded, options) if run_check and not pinned_at else None
            report(progress, 0.3, "decomposing against the ONNX registry")
            fixes = active_fixes()
            try:
                program = core_aten_first(program, options)
            except Exception as exc:  # torch's own decompositions, asked for by a capture setting
                fx_graph = fx_to_graph(program)
                return ExportResult(onnx.ModelProto(), fx_graph, Graph("onnx"),
                                    problems or [_preparation_problem(exc, fx_graph)])
            program = apply_decompositions(program, fixes)
            rewrites = apply_graph_rewrites(program, fixes)
            registry = _registration.ONNXRegistry.from_torchlib(opset_version=registry_opset(options.opset))
            register_translations(registry, fixes)
            try:
                with decompositions_while_preparing(fixes):
                    decomposed = _core._prepare_exported_program_for_export(program, registry=registry)
            except Exception as exc:  # torch's own passes over the captured graph (type promotion, ...)
                # After capture failures the program is draft_export's, sized by the example's values
                # where torch.export could not decide, and torch.onnx's passes may fail on it at a later
                # op (real-tensor propagation): what stopped the capture is the cause, not that op.
                fx_graph = fx_to_graph(program)
                return ExportResult(onnx.ModelProto(), fx_graph, Graph("onnx"),
                                    problems or [_preparation_problem(exc, fx_graph)])
            decomposed = without_effect_tokens(decomposed)
            drop_decomposed_checks(decomposed, set(fixes.decompositions))
            self.last_program, self.last_captured = decomposed, program  # compare runs it node by node
            self.last_key = key
            missing = nodes_without_onnx_function(decomposed, registry)
            fx_graph = fx_to_graph(decomposed, {node_name for node_name, _ in missing})
            fx_graph.label_inputs(list(loaded.input_names))
            report_partial(progress, TracedGraph(fx_graph))
            problems += [_missing_function_problem(fx_graph, node_name, message, registry.opset_version,
                                                   captured_origin(decomposed, node_name, program),
                                                   takes_complex_tensors(decomposed, node_name))
                         for node_name, message in missing]
            if problems:  # a capture that needed draft_export, or ops without a function: no ONNX file
                return ExportResult(onnx.ModelProto(), fx_graph,
                                    placeholder_graph(decomposed, registry, options, loaded, fx_graph, missing),
                                    problems)
            check_cancelled(cancelled)
            report(progress, 0.55, "translating to ONNX")
            try:
                with node_being_translated():
                    exported = translated_model(*translate_program(decomposed, registry, options, loaded))
            except Exception as exc:
                return ExportResult(onnx.ModelProto(), fx_graph, Graph("onnx"),
                                    [_translation_problem(exc, fx_graph)])
        model = exported.proto
        onnx_graph = onnx_graph_with_provenance(model, fx_graph)
        warnings_ = _opset_warnings(model, options.opset) + pinned_at
        options.opset = model_opset(model, options.opset)  # what the file really has: 18 when 17 could not be reached
        local_functions = {(f.domain, f.name) for f in model.functions}
        unsupported = nodes_without_runtime_kernel(onnx_graph, local_functions, fx_graph)
        if run_check and unsupported:  # ONNX Runtime cannot run it yet: what it will refuse next, listed now
            unsupported += nodes_without_kernel_for_their_types(onnx_graph, model, fx_graph)
        check_cancelled(cancelled)
        outputs = None
        if run_check and not unsupported:
            report(progress, 0.85, "running the model once in ONNX Runtime")
            run = run_on_cpu(exported, [i.name for i in model.graph.input], loaded.example_inputs)
            outputs = run.outputs
            if run.error:
                unsupported.append(runtime_error_problem(run.error, onnx_graph, fx_graph, model=model))
        report(progress, 1.0, "done")
        return ExportResult(exported, fx_graph, onnx_graph, unsupported, warnings_, outputs,
                            sizes_refused=_sizes_refused(loaded, options, captured, pinned_at, on_demand),
                            size_guards_on_demand=on_demand,
                            graph_rewrites=rewrites, check_every_input=bool(active_fixes().code_changes)
                            or bool((DECIDED_AT_CAPTURE | {SIZE_SCALARS}) & set(options.capture_settings)))

    def fixes_applied(self, mappings: list[FixMapping], options: ExportOptions
                      ) -> AbstractContextManager[dict[str, int]]:
        return applied_dynamo_mappings(mappings)

    def export_for_comparison(self, loaded: LoadedModel, options: ExportOptions,
                              cancelled: CancelCallback | None = None) -> ComparableExport:
        result = self.export(loaded, options, run_check=False, cancelled=cancelled)
        blocking = [p for p in result.unsupported if p.reason != ProblemReason.RUNTIME_ERROR]
        if blocking or not result.model.proto.graph.node:
            kinds = ", ".join(sorted({p.display_kind for p in blocking}))
            raise NothingToCompareError(
                f"{loaded.path.name} does not export with the dynamo exporter yet ({kinds}), so there is no ONNX "
                "model to compare.",
                f"Run `python main.py fix {loaded.path.name} --exporter dynamo --auto -o fixes.fixport.json` (or "
                "`check --exporter dynamo` to list the problems), then compare with --project.", problems=blocking)
        assert self.last_program is not None
        return ComparableExport(result.model, result.onnx_graph, result.source_graph, FxCapture(self.last_program),
                                [i.name for i in result.model.proto.graph.input])

    def plain_export(self, loaded: LoadedModel, options: ExportOptions, path: Path) -> None:
        refuse_onnx_files(loaded)
        args, kwargs, dynamic_shapes = export_arguments(loaded, options)  # the axes as torch.export takes them
        # attributes_kept: the loaded model is the worker's cached one, and a forward() that caches
        # tensors on its module would keep torch.export's fake ones for the next job
        with attributes_kept(loaded.module), code_changes_applied(loaded), quiet_torch(), rnn_dispatch_afresh(), \
                contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            torch.onnx.export(loaded.module, args, str(path), kwargs=kwargs, dynamic_shapes=dynamic_shapes,
                              opset_version=options.opset, input_names=options.input_names or loaded.input_names,
                              output_names=options.output_names, optimize=options.do_constant_folding,
                              dynamo=True, verbose=False)

    def node_samples(self, loaded: LoadedModel, options: ExportOptions, problems: Sequence[UnsupportedNode],
                     cancelled: CancelCallback | None = None) -> NodeSamples:
        """The program the problems were found in, run once to see each failing node's arguments: the
        last export's where it was of this model with these options and fixes (``fix --auto``'s own
        check: a capture that fails runs draft_export, which takes most of a minute on some models),
        else captured and decomposed again (the fixes so far applied by the caller)."""
        from fixport.core.exporters.dynamo.node_samples import node_samples

        if self.last_program is None or self.last_key != _program_key(loaded, options):
            self.last_program = self.last_captured = None
            self.export(loaded, replace(options), run_check=False, cancelled=cancelled)
        return node_samples(self.last_program, loaded, problems, self.last_captured)

    def validate_fix(self, mapping: FixMapping, opset: int) -> None:
        """Nothing to check before the trial: the fix compiles when the export registers it."""

    def can_fix(self, problem: UnsupportedNode) -> bool:
        return fixable(problem)

    def fix_candidates(self, problem: UnsupportedNode, opset: int, library: TemplateLibrary,
                       allow_custom: bool, sample: NodeSample | None = None) -> list[Candidate]:
        return candidates_for(problem, library, allow_custom, sample)

    def opset_that_fixes(self, problem: UnsupportedNode, opset: int, library: TemplateLibrary) -> int | None:
        # torch_lib translates at opset 18 whatever was asked; only an op ONNX Runtime refuses at the
        # model's opset (one ONNX added later, an attribute the conversion kept) is fixed by raising it.
        return opset_that_runs(problem.message, opset) if problem.reason == ProblemReason.RUNTIME_ERROR else None

    def generated_offers(self, kind: str, opset: int, cancelled: CancelCallback | None = None
                         ) -> list[RankedTemplate]:
        """The ONNX op of the same name, for float arithmetic the rewrite of the captured graph that
        casts an integer operand first (what torch.onnx's type promotion fails on), torch_lib's
        function as a starting point (when it has one), the schema stub, and the constant matrix of
        a linear op."""
        from fixport.core.exporters.dynamo.candidates import (
            graph_rewrite_offers,
            materialised_offers,
            standard_op_offers,
        )
        from fixport.symbolics.dynamo.offers import stub_offer, torchlib_offer
        from fixport.symbolics.library import TIER_EXACT_READY, parse_template_source

        offers = list(standard_op_offers(kind)) + graph_rewrite_offers(kind)
        for source in (torchlib_offer(kind), stub_offer(kind)):
            check_cancelled(cancelled)
            if source is not None:
                info = parse_template_source(source, f"<generated for {kind}>")
                offers.append(RankedTemplate(info.id, TIER_EXACT_READY, _GENERATED_WHY[info.id], info))
        return offers + materialised_offers(kind)

    def stub(self, request: StubRequest) -> str:
        """An ONNX function stub (onnxscript) from the op overload's schema."""
        from fixport.symbolics.dynamo.offers import stub_offer

        return stub_offer(request.kind)

    def op_info(self, kind: str) -> OpInfo:
        """The op overload's one schema; torch's TorchScript symbolics do not apply here."""
        from fixport.core.exporters.dynamo.fixes import op_overload

        try:
            return OpInfo(kind, [str(op_overload(kind)._schema)], [])
        except TemplateValidationError:
            return OpInfo(kind, [], [])

    def process_state(self) -> None:
        """None: its registry is built afresh for every export."""
        return None


def model_opset(model: onnx.ModelProto, default: int) -> int:
    """The default-domain opset ``model`` imports."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default)


def placeholder_graph(program: torch.export.ExportedProgram, registry: _registration.ONNXRegistry,
                      options: ExportOptions, loaded: LoadedModel, fx_graph: Graph,
                      missing: list[tuple[str, str]]) -> Graph:
    """The ONNX graph with one placeholder node per op without a function (for the right pane);
    an empty graph when even that does not translate."""
    if not missing:
        return Graph("onnx")
    register_placeholders(registry, program, {name for name, _ in missing})
    try:
        with node_being_translated():
            model = translate(program, registry, replace(options, do_constant_folding=False), loaded)
    except Exception:  # another node fails too: the problems list says what matters
        return Graph("onnx")
    graph = onnx_graph_with_provenance(model, fx_graph)
    for node in graph.nodes:
        node.unsupported = node.unsupported or node.op_type == PLACEHOLDER_OP
    return graph


def _opset_warnings(model: onnx.ModelProto, asked: int) -> list[str]:
    actual = model_opset(model, asked)
    if actual == asked:
        return []
    return [(f"The dynamo exporter wrote opset {actual}: converting its opset-{_constants.TORCHLIB_OPSET} "
             f"functions down to opset {asked} failed, so the model was kept at {actual}.")]


def _program_key(loaded: LoadedModel, options: ExportOptions) -> tuple:
    """What a captured program depends on: the model object (a weak reference: equal while that object
    lives), every export option, and the fixes in force (their mappings, as made active)."""
    return weakref.ref(loaded.module), repr(options), active_fixes().fingerprint


def _pinned_at(loaded: LoadedModel, options: ExportOptions, program: torch.export.ExportedProgram) -> list[str]:
    """Where the capture pinned a declared dim (``specialising_guards``), found with the same fixes applied."""
    args, kwargs, dynamic_shapes = export_arguments(loaded, options)
    with attributes_kept(loaded.module), sizes_as_settings_ask(loaded, options), code_changes_applied(loaded):
        return pinned_declared_dims(program, loaded.module, args, kwargs, dynamic_shapes,
                                    axis_labels(options.dynamic_axes))


def _guards_on_demand(loaded: LoadedModel, options: ExportOptions) -> GuardsOnDemand | None:
    """The guards of a capture with every declared dim ``Dim.AUTO``, taken when the other-size check
    asks, with this export's fixes (the context they are active in is kept for it); None without dims."""
    if not options.dynamic_axes:
        return None
    context = contextvars.copy_context()

    def find() -> list[str]:
        args, kwargs, dynamic_shapes = export_arguments(loaded, options)
        with attributes_kept(loaded.module), sizes_as_settings_ask(loaded, options), \
                code_changes_applied(loaded), quiet_torch(), contextlib.redirect_stderr(io.StringIO()):
            return recaptured_guards(loaded.module, args, kwargs, dynamic_shapes) if dynamic_shapes else []

    return GuardsOnDemand(lambda: context.run(find))


def _sizes_refused(loaded: LoadedModel, options: ExportOptions, captured: torch.export.ExportedProgram,
                   pinned_at: list[str], on_demand: GuardsOnDemand | None) -> Callable[[Sequence[Any]], str] | None:
    """Why the captured program refuses an input set (``SizeGuards``); None where a line that pinned a
    declared size has a change (then a failure there is the export's specialisation, to be reported),
    found now or, for a program that did not look pinned, when the other-size check first fails."""
    if changes_for_pinned(loaded, pinned_at):
        return None
    refusal = SizeGuards(captured, SUGGESTED_DIMS in options.capture_settings).refusal
    if on_demand is None:
        return refusal
    return lambda inputs: "" if changes_for_pinned(loaded, on_demand()) else refusal(inputs)


def registry_opset(opset: int) -> int:
    """torch_lib's functions start at its own opset; lower opsets are reached by version conversion."""
    return max(opset, _constants.TORCHLIB_OPSET)


# ---- step 1: capture ----

def capture(loaded: LoadedModel, options: ExportOptions) -> tuple[torch.export.ExportedProgram | None,
                                                                  list[UnsupportedNode]]:
    """torch's capture strategies in torch's order (non-strict, then strict; strict alone when the
    options ask: ``capture_strategies``); when all fail, ``draft_export`` lists every failure and
    still gives a graph to show (or None). The model's
    attributes are kept as they were: forward() may cache fake tensors on it while captured. The
    methods a code-change fix changes run changed while it is captured; the RNN ops dispatch afresh
    (``rnn_dispatch``: an earlier capture in this process would unroll an LSTM at the traced length)."""
    with attributes_kept(loaded.module), sizes_as_settings_ask(loaded, options), code_changes_applied(loaded), \
            rnn_dispatch_afresh():
        return _capture(loaded, options)


def sizes_as_settings_ask(loaded: LoadedModel, options: ExportOptions) -> contextlib.AbstractContextManager:
    """Sizes computed with tensor ops kept symbolic while captured, where the setting ``size_scalars`` asks
    (entered before the code changes: a changed method reads its module's names as they are then)."""
    return sizes_kept_symbolic(loaded.module) if SIZE_SCALARS in options.capture_settings else contextlib.nullcontext()


@contextlib.contextmanager
def code_changes_applied(loaded: LoadedModel) -> Iterator[None]:
    """The active code-change fixes' methods set on the model's parts (``methods_changed``) while
    the block runs; a change for a method the model does not run is the fix's error."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(methods_changed(loaded.module, active_fixes().code_changes))
        except LookupError as error:
            raise TemplateValidationError(f"A code-change fix does not fit this model: {error}.",
                                          "Remove the fix and run fix --auto again.") from error
        yield


def _capture(loaded: LoadedModel, options: ExportOptions) -> tuple[torch.export.ExportedProgram | None,
                                                                   list[UnsupportedNode]]:
    args, kwargs, dynamic_shapes = export_arguments(loaded, options)
    first_error: Exception | None = None
    for strategy_class in capture_strategies(options):
        result = strategy_class(verbose=False)(loaded.module, args, kwargs, dynamic_shapes=dynamic_shapes)
        if result.exported_program is not None:
            return result.exported_program, []
        first_error = first_error or result.exception
    assert first_error is not None
    raise_if_forward_fails(loaded)
    try:
        draft = torch.export.draft_export(loaded.module, args, kwargs, dynamic_shapes=dynamic_shapes)
    except Exception:
        return None, [_capture_problem_from_exception(first_error)]
    if DRAFT_EXPORT in options.capture_settings:  # asked for: what torch.export could not decide, the example decides
        return draft, []
    problems = capture_problems_from_report(draft)
    if any(marker in str(first_error) for marker in _DIMS_DO_NOT_HOLD):  # torch says which dims and why
        return draft, [_constraint_problem(first_error, problems, loaded, options)]
    return draft, stopping_line_first(_capture_problem_from_exception(first_error), problems)


def raise_if_forward_fails(loaded: LoadedModel) -> None:
    """A forward() that raises when simply run is an error in the model's code, not something
    torch.export cannot capture: the same :class:`TraceError` (exit 2) as the TorchScript trace's."""
    try:
        with torch.no_grad():
            loaded.module(*loaded.example_inputs)
    except Exception as exc:  # noqa: BLE001 -- the user's forward() can raise anything
        source, line = user_line_of_exception(exc)
        where = f" (at {source}: {line})" if line else f" (at {source})" if source else ""
        raise TraceError(f"Running the model failed: {type(exc).__name__}: {trimmed_message(str(exc))}{where}",
                         "The error comes from the model's forward(); fix it there and open the model again.",
                         details=traceback.format_exc()) from exc


def _still_failing(loaded: LoadedModel, options: ExportOptions) -> list[UnsupportedNode]:
    """What still stops torch.export from capturing the model ([] when it captures)."""
    program, problems = capture(loaded, options)
    if program is not None and not problems:
        return []
    return problems or [UnsupportedNode(f"{CAPTURE_KIND_PREFIX}capture", "", ProblemReason.CAPTURE_FAILED,
                                        "no graph", "", "")]


def export_arguments(loaded: LoadedModel, options: ExportOptions) -> tuple[tuple, dict, Any]:
    """torch.export's ``(args, kwargs, dynamic_shapes)`` for the model's call with ``options``' dynamic axes."""
    args, kwargs, named = _dynamic_shapes_by_name(loaded, options)
    if named is None:
        return args, kwargs, None
    if SUGGESTED_DIMS in options.capture_settings:  # the dims as torch.export's own suggested fixes give them
        try:
            with quiet_torch(), contextlib.redirect_stderr(io.StringIO()):
                return args, kwargs, suggested_dynamic_shapes(loaded.module, args, kwargs, named)
        except ValueError as error:
            raise ExportError(f"The capture setting {SUGGESTED_DIMS} does not fit: {error}.",
                              f"Drop {SUGGESTED_DIMS} from the capture settings, or keep that dim static.") from error
    dynamic_shapes, _ = _dynamic_shapes.convert_str_to_export_dim(named)
    return args, kwargs, dynamic_shapes


def _dynamic_shapes_by_name(loaded: LoadedModel, options: ExportOptions) -> tuple[tuple, dict, Any]:
    """torch.export's arguments and dynamic_shapes from the dynamic axes, each dynamic dim still
    under the name the axes give it (None where no axis is dynamic)."""
    args: tuple = tuple(loaded.example_inputs)
    kwargs: dict[str, Any] = {}
    if not options.dynamic_axes:
        return args, kwargs, None
    refuse_unknown_dynamic_axes(loaded, options, onnx_output_names(loaded, options.output_names))
    input_names = list(options.input_names or loaded.input_names)
    per_input = [dict(options.dynamic_axes.get(name, {})) or None for name in input_names]
    return args, kwargs, shapes_by_parameter(loaded.module, args, per_input)


def _constraint_problem(exc: BaseException, at_lines: list[UnsupportedNode], loaded: LoadedModel,
                        options: ExportOptions) -> UnsupportedNode:
    """Dynamic dims the code does not allow: torch's own account (which dim, what the code made of it,
    the ranges that hold) at the user's line that specialised it (from draft_export's report)."""
    text = str(exc)
    reasons = [line.strip(" -") for line in text.splitlines() if line.lstrip().startswith("- ")]
    fixes = text.split("Suggested fixes:", 1)[1].split("\n\n", 1)[0].split() if "Suggested fixes:" in text else []
    names = list(options.input_names or loaded.input_names)
    dims = sorted({_dim_label(int(i), int(axis), names, options) for i, axis in _INPUT_DIM_RE.findall(text)})
    if not dims and _CONSTRAINTS_VIOLATED in text:
        dims = [text.split(_CONSTRAINTS_VIOLATED, 1)[1].split(")", 1)[0].strip(" (")]
    source = next((p.source for p in at_lines if p.source), "")
    code = next((p.message.split("`")[3] for p in at_lines if p.source == source and p.message.count("`") >= 4), "")
    at = (f" at {source}" + (f" `{code}`" if code else "")) if source else ""
    which = ", ".join(dims) or "some dims"
    suggested = f" torch suggests: {' '.join(fixes)}." if fixes else ""
    message = (f"The dynamic dims asked for do not hold ({which}){at}: {' '.join(reasons) or text.splitlines()[0]}"
               f"{suggested} Keep {which} static (drop it from the dynamic axes), give dynamic_shapes a "
               "torch.export.Dim range the code allows, or change the line; `check --suggest-dynamic` says which "
               "dims can be dynamic.")
    return UnsupportedNode(kind=f"{CAPTURE_KIND_PREFIX}constraint_violation", instance=source or which,
                           reason=ProblemReason.CAPTURE_FAILED, message=message, scope="", source=source)


def _dim_label(position: int, axis: int, names: list[str], options: ExportOptions) -> str:
    """'len (x[1])' for inputs[0].shape[1] when the dynamic axes name it 'len'."""
    name = names[position] if position < len(names) else f"input {position}"
    declared = (options.dynamic_axes or {}).get(name, {})
    dim_name = declared.get(axis) if isinstance(declared, dict) else None
    return f"{dim_name} ({name}[{axis}])" if dim_name else f"{name}[{axis}]"


def _capture_problem_from_exception(exc: BaseException) -> UnsupportedNode:
    source, line = user_line_of_exception(exc)
    text = f"{type(exc).__name__}: {exc}"
    first = text.strip().splitlines()[0]
    code = f" `{line}`" if line else ""
    return UnsupportedNode(
        kind=f"{CAPTURE_KIND_PREFIX}{type(exc).__name__}", instance=source or type(exc).__name__,
        reason=ProblemReason.CAPTURE_FAILED, message=f"{first} (at {source or '?'}{code}). {capture_advice(text)}",
        scope="", source=source)


# ---- step 2: every node without an ONNX function ----

def nodes_without_onnx_function(program: torch.export.ExportedProgram,
                                registry: _registration.ONNXRegistry) -> list[tuple[str, str]]:
    """(FX node name, dispatcher message) for every call_function node the registry cannot
    translate: the same dispatch the translator does, for all nodes instead of stopping at one."""
    missing = []
    for node in program.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem or _core._is_onnx_op(node.target):
            continue
        function, message = _dispatching.dispatch(node, registry)
        if function is None:
            missing.append((node.name, message))
    return missing


def takes_complex_tensors(program: torch.export.ExportedProgram, node_name: str) -> bool:
    """Whether the node ``node_name`` of ``program`` has a complex tensor among its inputs."""
    node = next((n for n in program.graph.nodes if n.name == node_name), None)
    if node is None:
        return False
    values = [arg.meta.get("val") for arg in node.all_input_nodes]
    return any(isinstance(value, torch.Tensor) and value.is_complex() for value in values)


def _missing_function_problem(fx_graph: Graph, node_name: str, message: str, opset: int,
                              origin: tuple[str, str] | None = None, complex_inputs: bool = False) -> UnsupportedNode:
    """A node the registry cannot translate; ``origin``: the captured op torch.onnx decomposed into it."""
    node = fx_graph.node_by_id[node_name]
    namespace, _, rest = node.kind.partition("::")
    python_name = f"torch.ops.{namespace}.{rest}" if "." in rest else f"torch.ops.{namespace}.{rest}.default"
    made = (f" torch.onnx made it while decomposing {origin[0]} (node {origin[1]}): a decomposition of that op "
            "that avoids it fixes it." if origin else "")
    return UnsupportedNode(
        kind=node.kind, instance=node.id, reason=ProblemReason.NO_ONNX_FUNCTION,
        message=(f"No ONNX function for {node.kind} in torch's ONNX registry (torch_lib, opset {opset}): {message}. "
                 f"Give one with torch.onnx.export(..., dynamo=True, custom_translation_table={{{python_name}: fn}}) "
                 f"where fn is an onnxscript function, or decompose the op into supported aten ops.{made}"),
        scope=node.scope, source=node.source, decomposed_from=origin[0] if origin else "",
        complex_inputs=complex_inputs)


# ---- step 3: translate ----

def translate(program: torch.export.ExportedProgram, registry: _registration.ONNXRegistry,
              options: ExportOptions, loaded: LoadedModel) -> onnx.ModelProto:
    """What torch.onnx.export does after decomposition, as one ModelProto (weights inline)."""
    return translate_program(program, registry, options, loaded)[0].model_proto


def translated_model(onnx_program: Any, sources: Mapping[str, WeightSource]) -> OnnxModel:
    """The translated model; a big one's weights go from torch's tensors straight to a weights
    folder, as torch.onnx.export writes a file (no proto holding them all on the way), and torch's
    tensors (``sources``: what each initializer was written from) are then mapped from that file."""
    graph = onnx_program.model.graph
    weights = [(int(value.const_value.dtype), value.const_value.nbytes) for value in graph.initializers.values()
               if value.const_value is not None]
    write_contiguously(graph)
    if not weights_go_to_disk(weights):
        return on_disk(onnx_program.model_proto)
    folder = WeightsFolder()
    path = folder.path / EXPORT_FILE_NAME
    onnx_program.save(str(path), external_data=True)
    exported = read_export(path, folder)
    assert exported.base_dir is not None
    map_from_file(sources, exported.proto, exported.base_dir)
    for value in graph.initializers.values():  # onnxscript's rewrite rules keep the last graph they matched,
        value.const_value = None  # and with it the folded weights, views of torch's old memory
    return exported


def translate_program(program: torch.export.ExportedProgram, registry: _registration.ONNXRegistry,
                      options: ExportOptions, loaded: LoadedModel) -> tuple[Any, dict[str, WeightSource]]:
    """What torch.onnx.export does after decomposition: translate, convert the opset, optimize,
    rename; the ONNXProgram, its weights still torch's tensors, and the torch tensor each
    initializer is written from (see ``weight_sources``: found before the optimizer folds)."""
    onnx_program = _core._exported_program_to_onnx_program(program, registry=registry)
    sources = weight_sources(onnx_program.model.graph)
    metadata = {node.name: dict(node.metadata_props) for node in onnx_program.model.graph}
    if any(node.domain in ("", "ai.onnx") for node in onnx_program.model.graph.all_nodes()):
        onnx_program.model = onnxscript_apis.convert_version(onnx_program.model, options.opset)
    else:  # custom-domain nodes only (a node alone): nothing to convert, and onnxscript would refuse below 18
        onnx_program.model.graph.opset_imports[""] = options.opset
    for node in onnx_program.model.graph:  # ONNX's version converter drops metadata: provenance with it
        if not node.metadata_props and node.name in metadata:
            node.metadata_props.update(metadata[node.name])
    if options.do_constant_folding:
        with multi_output_rules_prefiltered():
            onnx_program.optimize()
    input_names = options.input_names or loaded.input_names
    if input_names:
        _ir_passes.rename_inputs(onnx_program.model, list(input_names))
    output_names = onnx_output_names(loaded, options.output_names)
    if output_names and (options.output_names or len(output_names) == len(onnx_program.model.graph.outputs)):
        _ir_passes.rename_outputs(onnx_program.model, output_names)
    _, _, named = _dynamic_shapes_by_name(loaded, options)
    if named is not None:  # the dims keep the names the dynamic axes give them, as torch.onnx.export does
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # inputs torch cannot line up with the axes keep torch's names
            onnx_program._rename_dynamic_axes(named)
    return onnx_program, sources


def _preparation_problem(exc: Exception, fx_graph: Graph) -> UnsupportedNode:
    """The exporter's own passes over the captured graph (type promotion runs it on fake tensors)
    failed at one node: a problem at that node, not a crash. The message names the node's target
    and its source ("Original traceback"); node names there are those of the pass's own copy."""
    text = str(exc)
    target = _EXECUTING_TARGET_RE.search(text)
    kind = f"aten::{target[1]}" if target else UNPLACED_KIND
    frames = _SOURCE_FRAME_RE.findall(text.partition("Original traceback:")[2])
    source = f"{Path(frames[-1][0]).name}:{frames[-1][1]}" if frames else ""
    node = next((n for n in fx_graph.nodes if n.kind == kind and source and n.source == source), None)
    if node is None and source:  # the pass's node came from decomposing the captured one (rsub -> sub)
        name = kind.partition("::")[2].partition(".")[0]
        node = next((n for n in fx_graph.nodes if n.source == source and name
                     and n.kind.partition("::")[2].partition(".")[0].endswith(name)), None)
    if node is not None:
        node.unsupported = True
    first_line = text.splitlines()[0] if text else ""
    return UnsupportedNode(
        kind=kind, instance=node.id if node else "", reason=ProblemReason.EXPORT_FAILED,
        message=(f"torch.onnx's preparation of the captured graph failed at {kind}: {type(exc).__name__}: "
                 f"{first_line} This is the exporter's own pass, not your model: the TorchScript exporter "
                 "(--exporter torchscript) may export it, or rewrite the line named here."),
        scope=node.scope if node else "", source=source)


def _translation_problem(exc: Exception, fx_graph: Graph) -> UnsupportedNode:
    chain, current = [], exc
    while current is not None and len(chain) < 10:
        chain.append(current)
        current = current.__cause__
    node_name = next((m[1] for e in chain if (m := _TRANSLATING_NODE_RE.search(str(e)))), "")
    node = fx_graph.node_by_id.get(node_name)
    if node is None:
        raise ExportError(f"Translating the captured graph to ONNX failed: {type(chain[-1]).__name__}: "
                          f"{str(chain[-1]).splitlines()[0] if str(chain[-1]) else ''}",
                          "See the Log for the exporter's traceback.") from exc
    node.unsupported = True
    root = chain[-1]
    return UnsupportedNode(
        kind=node.kind, instance=node.id, reason=ProblemReason.TRANSLATION_FAILED,
        message=f"The ONNX function for {node.kind} failed: {type(root).__name__}: {str(root).splitlines()[0]}",
        scope=node.scope, source=node.source)


# ---- provenance: ONNX node -> FX node, from the exporter's node metadata ----

def fx_node_of(node: onnx.NodeProto) -> str:
    """The FX node name an ONNX node came from ('' when the exporter recorded none)."""
    for prop in node.metadata_props:
        if prop.key == FX_NODE_METADATA:
            try:
                scopes = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError):
                return ""
            return str(scopes[-1]) if scopes else ""
    return ""


def onnx_graph_with_provenance(model: onnx.ModelProto, fx_graph: Graph) -> Graph:
    """The ONNX graph with ``origin`` = the FX node each node came from, and its module scope."""
    for node in model.graph.node:
        origin = fx_node_of(node)
        if origin in fx_graph.node_by_id:
            node.attribute.append(onnx.helper.make_attribute(PROVENANCE_ATTRIBUTE, origin))
    onnx_graph = onnx_to_graph(model)
    strip_provenance(model)
    for node in onnx_graph.nodes:
        if node.origin and not node.scope:
            node.scope = fx_graph.node_by_id[node.origin[0]].scope
    return onnx_graph


