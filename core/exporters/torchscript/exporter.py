"""The TorchScript exporter (``torch.onnx.export(dynamo=False)``), the first :class:`Exporter`."""
from __future__ import annotations

import io
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import onnx
import torch

from fixport.core.exporters.base import (
    ComparableExport,
    Exporter,
    ExportResult,
    NodeSample,
    NodeSamples,
    refuse_onnx_files,
    refuse_unknown_dynamic_axes,
)
from fixport.core.exporters.profiles import TORCHSCRIPT
from fixport.core.exporters.torchscript.applied_fixes import (
    applied_mappings,
    code_changes_applied,
    validate_mappings,
)
from fixport.core.exporters.torchscript.candidates import (
    STRATEGIES,
    candidates_for,
    opset_that_fixes,
    traced_value_offers,
)
from fixport.core.exporters.torchscript.capture import TorchCaptureError, TorchGraphRecorder
from fixport.core.exporters.torchscript.conversion_hooks import ConversionRecord, conversion_hooks
from fixport.core.exporters.torchscript.failure_reasons import classify_failure
from fixport.core.exporters.torchscript.reference_kernels import reference_for
from fixport.core.exporters.torchscript.registry import SymbolicRegistryState, builtin_opsets, first_supported_opset
from fixport.core.exporters.torchscript.script_part import autograd_functions_named, given_inputs_only
from fixport.core.exporters.torchscript.weightless_shape_inference import shape_inference_without_weights
from fixport.core.exporters.torchscript.weights import weights_written_to
from fixport.core.foundation.errors import FixportError
from fixport.core.foundation.kept_attributes import attributes_kept
from fixport.core.loaders.loading import LoadedModel, onnx_output_names
from fixport.core.loaders.source_frames import is_library_frame
from fixport.core.onnx_io.diagnosis import (
    nodes_without_kernel_for_their_types,
    nodes_without_runtime_kernel,
    runtime_error_problem,
)
from fixport.core.onnx_io.onnx_graph import onnx_to_graph, strip_provenance
from fixport.core.onnx_io.onnx_model import EXPORT_FILE_NAME, WEIGHTS_FILE, WeightsFolder, on_disk, read_export
from fixport.core.onnx_io.op_docs import OpInfo
from fixport.core.onnx_io.ort_session import run_on_cpu
from fixport.core.onnx_io.resident_weights import WeightPagesHandedBack
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import Candidate
from fixport.core.records.requests import StubRequest
from fixport.core.records.results import ExportedGraph, TracedGraph
from fixport.core.words.cancel import (
    CancelCallback,
    ProgressCallback,
    check_cancelled,
    report,
    report_partial,
)
from fixport.core.words.errors import (
    ExportError,
    NothingToCompareError,
    TemplateValidationError,
    TraceError,
    trimmed_message,
)
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import CONVERTING_STAGE, DEFAULT_OPSET, TRACING_STAGE, ProblemReason
from fixport.symbolics.library import RankedTemplate, TemplateLibrary


class TorchScriptExporter(Exporter):
    """``torch.onnx.export(dynamo=False)`` with diagnosis and provenance hooks."""

    profile = TORCHSCRIPT
    default_opset = TORCHSCRIPT.default_opset or DEFAULT_OPSET  # Fixport's choice, not torch's (20)
    fix_strategies = tuple(STRATEGIES)
    per_node_note = ("Per-node analysis re-exported the model without constant folding, so fused nodes "
                     "(Conv+BatchNorm) are compared one by one against their own torch ops.")

    def export(self, loaded: LoadedModel, options: ExportOptions, *, diagnose: bool = True,
               run_check: bool = True, progress: ProgressCallback | None = None,
               cancelled: CancelCallback | None = None) -> ExportResult:
        options.validate(self.profile.opsets)
        refuse_onnx_files(loaded)
        check_cancelled(cancelled)
        report(progress, 0.05, TRACING_STAGE)
        target = _export_target(loaded)
        path = target if isinstance(target, io.BytesIO) else target.path / EXPORT_FILE_NAME
        # a model big enough to be written to a file: its weight pages go back while torch converts
        pages = WeightPagesHandedBack()

        def traced(graph: Graph) -> None:
            self._traced(graph, loaded.input_names, progress)
            if not isinstance(path, io.BytesIO):
                pages.start()

        try:
            # and torch's shape inference, which holds the GIL, is not handed the weights to read
            inference = nullcontext() if isinstance(path, io.BytesIO) else shape_inference_without_weights()
            with inference:
                record, caught = self._run_torch_export(loaded, options, path, diagnose, on_traced=traced)
        except _FailedAfterConversion as failure:
            if not diagnose:  # a node the exporter could not convert: no placeholders without diagnosis
                raise ExportError(f"The export failed: {failure.reason}", failure.hint,
                                  failure.details) from failure.__cause__  # torch's own error
            return _failed_export(failure)  # a problem to list, like any other (exit 1, not 2)
        finally:
            pages.stop()
        check_cancelled(cancelled)
        report(progress, 0.7, "reading the exported graph")
        # A big model's weights go to disk here, where the session and the saved file read them:
        # torch holds them in memory already.
        exported = (on_disk(onnx.load_model_from_string(target.getvalue())) if isinstance(target, io.BytesIO)
                    else read_export(path, target))
        del target  # the serialised export, once read
        model = exported.proto
        if not model.graph.output:
            raise TraceError("The model's forward() returned no tensor (None, or containers without tensors), "
                             "so the exported ONNX graph has no outputs.",
                             "Return the tensors you want from forward() (for a transformers model, "
                             "check that the output field you return is set), and open the model again.")
        onnx_graph = onnx_to_graph(model)
        strip_provenance(model)
        assert record.torchscript_graph is not None
        unsupported = [classify_failure(f, first_supported_opset(f.kind))
                       for f in record.failures + record.unserializable]
        local_functions = {(f.domain, f.name) for f in model.functions}
        unsupported += nodes_without_runtime_kernel(onnx_graph, local_functions, record.torchscript_graph)
        if run_check and unsupported:  # ONNX Runtime cannot run it yet: what it will refuse next, listed now
            unsupported += nodes_without_kernel_for_their_types(onnx_graph, model, record.torchscript_graph)
        check_cancelled(cancelled)
        outputs = None
        if run_check and not unsupported:
            report_partial(progress, ExportedGraph(onnx_graph))  # on screen while ORT checks it
            report(progress, 0.85, "running the model once in ONNX Runtime")
            run = run_on_cpu(exported, loaded.input_names, loaded.example_inputs)
            outputs = run.outputs
            if run.error:
                unsupported.append(runtime_error_problem(run.error, onnx_graph, record.torchscript_graph,
                                                         model=model))
        report(progress, 1.0, "done")
        return ExportResult(exported, record.torchscript_graph, onnx_graph, unsupported, caught, outputs)

    def fixes_applied(self, mappings: list[FixMapping], options: ExportOptions
                      ) -> AbstractContextManager[dict[str, int]]:
        return applied_mappings(mappings, options.opset)

    def export_for_comparison(self, loaded: LoadedModel, options: ExportOptions,
                              cancelled: CancelCallback | None = None) -> ComparableExport:
        recorder = TorchGraphRecorder()
        try:
            with recorder.hooks(len(loaded.example_inputs)), _torch_onnx_log_silenced():
                result = self.export(loaded, options, diagnose=False, run_check=False, cancelled=cancelled)
        except ExportError as exc:
            raise _why_the_export_failed(exc, loaded) from exc
        try:
            capture, notes = recorder.build(), []
        except TorchCaptureError as exc:
            capture, notes = None, [f"Torch values cannot be captured node by node: {exc}"]
        return ComparableExport(result.model, result.onnx_graph, result.source_graph, capture,
                                list(loaded.input_names), notes,
                                custom_node_references=reference_for(capture) if capture else None,
                                warnings=list(result.warnings))

    def plain_export(self, loaded: LoadedModel, options: ExportOptions, path: Path) -> None:
        refuse_onnx_files(loaded)
        with warnings.catch_warnings(), _torch_onnx_log_silenced(), attributes_kept(loaded.module):
            warnings.simplefilter("ignore")
            torch.onnx.export(loaded.module, loaded.example_inputs, str(path), opset_version=options.opset,
                              input_names=options.input_names or loaded.input_names or None,
                              output_names=options.output_names, dynamic_axes=options.dynamic_axes,
                              do_constant_folding=options.do_constant_folding,
                              operator_export_type=getattr(torch.onnx.OperatorExportTypes,
                                                           options.operator_export_type),
                              autograd_inlining=options.autograd_inlining, dynamo=False)

    def node_samples(self, loaded: LoadedModel, options: ExportOptions, problems: Sequence[UnsupportedNode],
                     cancelled: CancelCallback | None = None) -> NodeSamples:
        from fixport.core.exporters.torchscript.node_samples import node_samples

        check_cancelled(cancelled)
        return node_samples(lambda: self._run_torch_export(loaded, options, io.BytesIO(), diagnose=True),
                            loaded, problems)

    def validate_fix(self, mapping: FixMapping, opset: int) -> None:
        validate_mappings([mapping], opset)

    def can_fix(self, problem: UnsupportedNode) -> bool:
        if problem.reason == ProblemReason.RUNTIME_ERROR and not problem.kind.startswith("aten::"):
            return False  # an ONNX node ORT refuses with no TorchScript op to re-convert
        if problem.reason == ProblemReason.EXPORT_FAILED and not problem.instance:
            return False  # the export itself failed, no node named: no op to give a fix to
        if problem.reason == ProblemReason.BAKED_INPUT:  # a scale read with float(): kept an input by a Function
            return bool(traced_value_offers(problem.kind))
        if problem.reason == ProblemReason.SHAPE_SPECIALISED and problem.code_change_fix:
            return True  # a size folded at a line the trace warned about: that line changed while traced
        # The model's own randomness, sizes or input values its code turned into constants: no conversion changes that.
        return problem.reason not in (ProblemReason.RANDOM_OUTPUT, ProblemReason.SHAPE_SPECIALISED,
                                      ProblemReason.BAKED_INPUT)

    def fix_candidates(self, problem: UnsupportedNode, opset: int, library: TemplateLibrary,
                       allow_custom: bool, sample: NodeSample | None = None) -> list[Candidate]:
        return candidates_for(problem, opset, library, allow_custom, sample)

    def opset_that_fixes(self, problem: UnsupportedNode, opset: int, library: TemplateLibrary) -> int | None:
        return opset_that_fixes(problem, opset, library)

    def generated_offers(self, kind: str, opset: int, cancelled: CancelCallback | None = None
                         ) -> list[RankedTemplate]:
        """The ONNX op of the same name, torch's decomposition replayed, a torch.library op's own
        code inlined, the constant matrix of a linear op (``symbolics/synthesis/``); for a resize, the
        fix that keeps a scale read with ``float(scale)`` an input."""
        from fixport.symbolics.synthesis.offers import (
            decomposition_offer,
            inlined_offer,
            materialised_offer,
            standard_op_offer,
        )

        offers = []
        for make in (standard_op_offer, decomposition_offer, inlined_offer, materialised_offer):
            check_cancelled(cancelled)
            try:
                offer = make(kind, opset)
            except Exception:  # a kind torch or ONNX cannot describe: nothing to generate from
                offer = None
            if offer is not None:
                offers.append(offer)
        return offers + traced_value_offers(kind)

    def op_info(self, kind: str) -> OpInfo:
        """The op's TorchScript schemas and the opsets torch has a built-in symbolic at."""
        try:
            schemas = [str(s) for s in torch._C._jit_get_schemas_for_operator(kind)]
        except RuntimeError:
            schemas = []
        return OpInfo(kind, schemas, builtin_opsets(kind))

    def process_state(self) -> SymbolicRegistryState:
        return SymbolicRegistryState()

    def stub(self, request: StubRequest) -> str:
        """A symbolic stub from the op's schema, or from the autograd.Function's forward."""
        from fixport.symbolics.stubs import PythonOpSignature, generate_stub

        python_op = None
        if request.python_op_name:
            classes = autograd_functions_named(request.python_op_name)
            python_op = (PythonOpSignature.from_function(classes[0]) if classes
                         else PythonOpSignature(request.python_op_name, []))
        return generate_stub(request.kind, opset=request.opset, input_types=request.input_types,
                             python_op=python_op)

    @staticmethod
    def _traced(graph: Graph, input_names: list[str], progress: ProgressCallback | None) -> None:
        graph.label_inputs(list(input_names))
        report_partial(progress, TracedGraph(graph))
        report(progress, 0.3, CONVERTING_STAGE)

    def _run_torch_export(self, loaded: LoadedModel, options: ExportOptions, path: Path | io.BytesIO, diagnose: bool,
                          on_traced: Callable[[Graph], None] | None = None) -> tuple[ConversionRecord, list[str]]:
        output_names = onnx_output_names(loaded, options.output_names)
        refuse_unknown_dynamic_axes(loaded, options, output_names)
        kwargs: dict[str, Any] = dict(
            opset_version=options.opset,
            input_names=options.input_names or loaded.input_names or None,
            output_names=output_names,
            dynamic_axes=options.dynamic_axes,
            do_constant_folding=options.do_constant_folding,
            operator_export_type=getattr(torch.onnx.OperatorExportTypes, options.operator_export_type),
            custom_opsets=options.custom_opsets or None,
            autograd_inlining=options.autograd_inlining,
            dynamo=False,
        )
        # A file export keeps its weights in the folder's weights file: written there from torch's
        # tensors, never encoded into the proto torch serialises (see weights.py).
        weights = nullcontext() if isinstance(path, io.BytesIO) else weights_written_to(path.parent / WEIGHTS_FILE)
        with warnings.catch_warnings(record=True) as caught, weights, conversion_hooks(
                diagnose=diagnose, opset=options.opset, autograd_inlining=options.autograd_inlining,
                user_input_count=len(loaded.example_inputs), on_traced=on_traced,
                traced_from=loaded.module, trace_context=(repr(sorted(kwargs.items())),)) as record:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            warnings.filterwarnings("ignore", category=FutureWarning)
            warnings.filterwarnings("ignore", message="no signature found for")
            try:
                # No torch.no_grad(): it would switch modules such as MultiheadAttention to
                # fast paths that a plain export never sees.
                # attributes_kept: the loaded model is the worker's cached one, and a forward() that caches
                # what it computes would keep the trace's tensors (a traced size) for the next export
                with given_inputs_only(loaded.module, len(loaded.example_inputs)), code_changes_applied(loaded), \
                        attributes_kept(loaded.module):
                    torch.onnx.export(loaded.module, loaded.example_inputs,
                                      path if isinstance(path, io.BytesIO) else str(path), **kwargs)
            except Exception as exc:
                raise self._explain_failure(exc, record, loaded) from exc
        notes = sorted({_warning_text(w) for w in caught
                        if not issubclass(w.category, (DeprecationWarning, FutureWarning))})
        return record, notes

    @staticmethod
    def _explain_failure(exc: Exception, record: ConversionRecord, loaded: LoadedModel) -> Exception:
        details = traceback.format_exc()
        if not record.conversion_started:
            where = _user_frame(exc, loaded.path)
            error = f"{type(exc).__name__}: {trimmed_message(str(exc))}{where}"
            if _forward_runs(loaded):
                return TraceError(
                    f"torch's TorchScript tracer fails on this model, whose forward() runs in eager torch on the "
                    f"same inputs: {error}",
                    "The dynamo exporter (torch.export) takes code the tracer cannot: check the model with "
                    "--exporter dynamo. To keep TorchScript, change the line the tracer stops at.",
                    details=details,
                    window_hint="The dynamo exporter (torch.export) takes code the tracer cannot: choose dynamo "
                                "in the toolbar's Exporter box. To keep TorchScript, change the line the tracer "
                                "stops at.")
            return TraceError(f"Tracing the model failed: {error}",
                              "The error comes from the model's forward(); fix it there and open the model again.",
                              details=details)
        hint = ("ONNX has no complex tensors: return torch.view_as_real(...) from forward() (and take real inputs)"
                if "Complex" in str(exc) and record.has_complex and not record.unserializable
                else "The exporter's traceback is in the log.")
        return _FailedAfterConversion(f"{type(exc).__name__}: {trimmed_message(str(exc))}", hint, details=details,
                                      record=record)


# One protobuf holds at most 2 GB; bigger models go through a file with external data.
IN_MEMORY_EXPORT_LIMIT_BYTES = 1 << 30


def _export_target(loaded: LoadedModel) -> io.BytesIO | WeightsFolder:
    """Where torch writes the export: memory for models under 1 GB of weights (no disk round trip
    on every re-export), otherwise a file in a folder that then keeps the model's weights."""
    state = loaded.module.state_dict() if isinstance(loaded.module, torch.nn.Module) else {}
    weights = sum(t.numel() * t.element_size() for t in state.values() if isinstance(t, torch.Tensor))
    return io.BytesIO() if weights < IN_MEMORY_EXPORT_LIMIT_BYTES else WeightsFolder()


class _FailedAfterConversion(Exception):
    """The exporter raised once conversion had started (with diagnosis: after every node was
    converted, e.g. a graph output ONNX cannot type). Never leaves the worker: it holds torch nodes."""

    def __init__(self, reason: str, hint: str, details: str, record: ConversionRecord) -> None:
        super().__init__(reason)
        self.reason, self.hint, self.details, self.record = reason, hint, details, record


def _failed_export(failure: _FailedAfterConversion) -> ExportResult:
    """What a diagnosing export reports when torch's exporter fails after converting the nodes:
    the traced graph, no ONNX graph, and the failure as the one problem (with the per-node ones)."""
    record = failure.record
    problems = [classify_failure(f, first_supported_opset(f.kind)) for f in record.failures + record.unserializable]
    if not record.unserializable:  # no node to blame: the export itself is the problem
        problems.append(UnsupportedNode(kind="(export)", instance="", reason=ProblemReason.EXPORT_FAILED,
                                        message=f"The export failed after converting every node: "
                                                f"{failure.reason.rstrip('. ')}. {failure.hint}.", scope="",
                                        source=""))
    traced = record.torchscript_graph if record.torchscript_graph is not None else Graph(kind="torchscript")
    return ExportResult(onnx.ModelProto(), traced, Graph(kind="onnx"), problems)


def _warning_text(caught: warnings.WarningMessage) -> str:
    """'TracerWarning at model.py:12: Converting a tensor to a Python integer ...': where in the user's
    code the trace went wrong, when the warning points there (TracerWarnings do)."""
    torch_dir = str(Path(torch.__file__).parent)
    where = "" if caught.filename.startswith(torch_dir) else f" at {Path(caught.filename).name}:{caught.lineno}"
    return f"{caught.category.__name__}{where}: {caught.message}"


def _forward_runs(loaded: LoadedModel) -> bool:
    """Whether forward() runs in eager torch on the example inputs, called as the export calls it:
    where it does, a trace failure is the tracer's, not the model's."""
    try:
        with given_inputs_only(loaded.module, len(loaded.example_inputs)):
            loaded.module(*loaded.example_inputs)
    except (Exception, SystemExit):  # the model's own failure: the advice stays on forward()
        return False
    return True


def _user_frame(exc: BaseException, model_path: Path) -> str:
    """' (at model.py line 12: y = x.foo())' for the deepest frame in the user's code."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not is_library_frame(f.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    name = Path(frame.filename).name
    return f" (at {name} line {frame.lineno}: {frame.line})" if frame.line else f" (at {name} line {frame.lineno})"


@contextmanager
def _torch_onnx_log_silenced() -> Iterator[None]:
    """torch.onnx.export turns its C++ log on for good (a truthiness bug in setup_onnx_logging) and
    prints the whole TorchScript graph to stdout when an export fails; the error says what matters."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _why_the_export_failed(exc: ExportError, loaded: LoadedModel) -> FixportError:
    """Compare needs a complete export: blame a fix that raised, or point at `fix` for unsupported nodes."""
    cause = exc.__cause__
    in_fix = [f for f in traceback.extract_tb(cause.__traceback__) if f.filename.startswith("<template ")] \
        if cause is not None else []
    if cause is not None and in_fix:
        frame = in_fix[-1]
        return TemplateValidationError(
            f"The fix {frame.filename.strip('<>').removeprefix('template ')} raised at line {frame.lineno} "
            f"while exporting for compare: {type(cause).__name__}: {str(cause).splitlines()[0][:200]}",
            "Fix that line in the project's template source, then compare again.", details=exc.details,
            line=frame.lineno)
    if "Unsupported: ONNX export" in exc.message or "is not supported" in exc.message:
        return NothingToCompareError(f"{loaded.path.name} still has nodes torch.onnx.export cannot convert, so "
                                     "there is no ONNX model to compare.",
                                     f"Run `python main.py fix {loaded.path.name} --auto -o fixes.fixport.json` (or "
                                     "`check` to list the nodes), then compare with --project fixes.fixport.json.",
                                     details=exc.details)
    return exc
