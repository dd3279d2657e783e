"""One contract for every exporter: what an export returns and how it is called.

The TorchScript exporter (``torchscript/``) is the first; the torch.export-based one
(``dynamo/``) is the second, beside it, with the same :class:`Exporter` protocol. Callers get
one with :func:`fixport.core.exporters.choice.exporter_for` and never ask which one it is.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from fixport.core.exporters.profiles import ExporterProfile
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.onnx_io.op_docs import OpInfo
from fixport.core.onnx_io.reference_plan import NodeReference
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.compare_result import ValueKey
from fixport.core.records.fix_choices import Candidate, GraphRewrite
from fixport.core.records.fix_strategies import FixStrategy
from fixport.core.records.requests import StubRequest
from fixport.core.words.cancel import CancelCallback, ProgressCallback
from fixport.core.words.errors import ExportError
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode

if TYPE_CHECKING:
    from fixport.core.loaders.loading import LoadedModel
    from fixport.symbolics.library import RankedTemplate, TemplateLibrary


@dataclass
class ExportResult:
    """An exported model with both graphs, their provenance, and every problem found."""

    model: OnnxModel  # a bare ModelProto (the empty one of a failed export) is held as it is
    source_graph: Graph  # the source graph: TorchScript, or the FX graph (kind "fx") for dynamo
    onnx_graph: Graph
    unsupported: list[UnsupportedNode]
    warnings: list[str] = field(default_factory=list)
    runtime_outputs: list[Any] | None = None  # ORT's outputs on the example inputs, when the check ran them
    # Why an input set is outside the sizes the export holds for ('' inside): the captured program's
    # guards (dynamo); None where the exporter keeps none (the trace assumes its sizes silently).
    sizes_refused: Callable[[Sequence[Any]], str] | None = field(default=None, repr=False, compare=False)
    # Where a capture that looked general pinned sizes after all: 'SizeGuard at file.py:12: ...' lines,
    # found by a second capture only when the other-size check asks (dynamo; see specialising_guards)
    size_guards_on_demand: Callable[[], list[str]] | None = field(default=None, repr=False, compare=False)
    graph_rewrites: list[GraphRewrite] = field(default_factory=list)  # what the fixes' graph rewrites changed
    # The capture ran code changed for it, or settled what it could not decide with the example's values
    # (dynamo's code-change fixes): every input is checked at other values, floats too.
    check_every_input: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.model, OnnxModel):
            self.model = OnnxModel(self.model)

    @property
    def ok(self) -> bool:
        return not self.unsupported


class NodeCapture(Protocol):
    """The source graph as a function of the model's inputs returning every node's tensor
    outputs, keyed the way ONNX nodes name their origin: what per-node comparison runs."""

    def run(self, inputs: Sequence[Any], device: str = "cpu",
            keep: Collection[ValueKey] | None = None) -> dict[ValueKey, np.ndarray]:
        """The values of one input set: all, or the ones in ``keep``."""
        ...

    def value_sizes(self, inputs: Sequence[Any], device: str = "cpu") -> dict[ValueKey, int]:
        """The size in bytes of every value the run would return, keeping none of them."""
        ...


@dataclass
class ComparableExport:
    """A complete export to compare with torch: the model, both graphs, and the torch side's
    per-node capture (None, with ``notes`` saying why, when it cannot be made)."""

    model: OnnxModel
    onnx_graph: Graph
    source_graph: Graph
    capture: NodeCapture | None
    input_names: list[str]  # the ONNX model's graph inputs, in the model's order
    notes: list[str] = field(default_factory=list)
    # the exporter's reference kernel per custom-domain node, so ONNX Runtime can run them (None: none)
    custom_node_references: NodeReference | None = None
    warnings: list[str] = field(default_factory=list)  # the export's own (TracerWarnings name baked lines)


@dataclass
class NodeSample:
    """One failing node as a model of its own, with the inputs it saw and torch's outputs."""

    instance: str  # the node's instance key in the source graph
    module: Any  # a torch.nn.Module whose forward is the node alone
    inputs: tuple[Any, ...]
    expected: list[tuple[str, np.ndarray]]  # torch's outputs of ``module`` on ``inputs``, named
    # input index -> the axes that are dynamic where the node sits (declared dynamic dims reach
    # it); the node alone is exported with them dynamic too, so a fix that bakes them fails there
    dynamic_dims: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # the op's own (args, kwargs) with the values the node saw, for fixes made from them (a custom
    # op's implementation called on them); None where the exporter does not keep them
    arguments: tuple[tuple, dict] | None = None


@dataclass
class NodeSamples:
    """The failing nodes taken out on their own, and why the others could not be."""

    samples: dict[str, NodeSample] = field(default_factory=dict)  # by instance key
    undecided: dict[str, str] = field(default_factory=dict)  # instance key -> why no sample

    def sample_for(self, problem: UnsupportedNode) -> NodeSample | None:
        return self.samples.get(problem.instance)

    def why_not(self, problem: UnsupportedNode) -> str:
        return self.undecided.get(problem.instance, "the node was not captured")


def first_error_line(error: BaseException) -> str:
    """An exception's first line, short enough to say why a node has no sample."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


class ProcessState(Protocol):
    """Process-global state an exporter keeps between exports (TorchScript's symbolic registry),
    which the worker puts back after every job so one job's fixes never reach the next."""

    def snapshot(self) -> object:
        """The state now, to :meth:`restore` later."""
        ...

    def restore(self, snapshot: object) -> None:
        ...

    def fingerprint(self) -> object:
        """A cheap comparable summary: it differs when something changed the state (loading a
        model file that registers symbolics, say)."""
        ...


class Exporter(Protocol):
    """Everything Fixport does that depends on the exporter, behind one object per exporter.

    Its torch-free face is ``profile`` (what the window and the command line know of it); the
    methods run in the worker. A third exporter is a new class and a new profile, nothing else.
    """

    profile: ExporterProfile
    per_node_note: str  # what per-node comparison did to line the two graphs up, for the report
    default_opset: int  # the opset it exports at where neither the user nor the model file asks one
    fix_strategies: tuple[FixStrategy, ...]  # those of FIX_STRATEGIES it implements, in order; it declines the rest

    def export(self, loaded: LoadedModel, options: ExportOptions, *, diagnose: bool = True,
               run_check: bool = True, progress: ProgressCallback | None = None,
               cancelled: CancelCallback | None = None) -> ExportResult:
        """Export ``loaded`` with ``options``; with ``diagnose``, every unsupported node is
        listed instead of stopping at the first; with ``run_check``, ONNX Runtime runs it once."""
        ...

    def fixes_applied(self, mappings: list[FixMapping], options: ExportOptions
                      ) -> AbstractContextManager[dict[str, int]]:
        """The project's fixes registered the way this exporter takes them, for the exports run
        inside; yields the custom-domain opsets they need."""
        ...

    def export_for_comparison(self, loaded: LoadedModel, options: ExportOptions,
                              cancelled: CancelCallback | None = None) -> ComparableExport:
        """A complete export with the per-node capture of its source graph; a FixportError that
        says what to fix when the model does not export completely."""
        ...

    def plain_export(self, loaded: LoadedModel, options: ExportOptions, path: Path) -> None:
        """``torch.onnx.export`` alone, as a user would call it with ``options`` (opset, names,
        dynamic axes, folding), to ``path``: none of Fixport's hooks, fixes, capture settings or
        passes (the plain-torch baseline). Raises whatever the exporter raises."""
        ...

    def node_samples(self, loaded: LoadedModel, options: ExportOptions, problems: Sequence[UnsupportedNode],
                     cancelled: CancelCallback | None = None) -> NodeSamples:
        """Each failing node of ``problems`` as a model of its own with the values it saw, so a fix
        is tried on the node (:mod:`fixport.core.fixing.node_trials`); the others say why not."""
        ...

    def validate_fix(self, mapping: FixMapping, opset: int) -> None:
        """Raise TemplateValidationError when ``mapping`` cannot work at ``opset`` (before a trial)."""
        ...

    def can_fix(self, problem: UnsupportedNode) -> bool:
        """Whether a fix in the library could remove ``problem`` (not a capture failure, say)."""
        ...

    def fix_candidates(self, problem: UnsupportedNode, opset: int, library: TemplateLibrary,
                       allow_custom: bool, sample: NodeSample | None = None) -> list[Candidate]:
        """Every fix worth trying for ``problem``, strategy by strategy in the order of
        :data:`~fixport.core.records.fix_strategies.FIX_STRATEGIES` (``fix --auto`` tries them so); ``sample``
        (the node with the values it saw) adds the fixes made from those values."""
        ...

    def opset_that_fixes(self, problem: UnsupportedNode, opset: int, library: TemplateLibrary) -> int | None:
        """An opset above ``opset`` at which ``problem`` goes away without a fix, or None."""
        ...

    def generated_offers(self, kind: str, opset: int, cancelled: CancelCallback | None = None
                         ) -> list[RankedTemplate]:
        """Fixes generated for ``kind`` (the Template dock shows them first)."""
        ...

    def stub(self, request: StubRequest) -> str:
        """A starting fix generated from the op's schema."""
        ...

    def op_info(self, kind: str) -> OpInfo:
        """What torch knows of op ``kind`` as this exporter's graphs spell it (for the Inspector)."""
        ...

    def process_state(self) -> ProcessState | None:
        """The process-global state this exporter keeps between exports; None when it keeps none."""
        ...


def refuse_onnx_files(loaded: LoadedModel) -> None:
    """Exporters need a torch module: an opened `.onnx` file has nothing to export."""
    if loaded.module is None:
        raise ExportError(f"{loaded.path.name} is an ONNX file: there is nothing to export.",
                          "Open the PyTorch model to export it, or compare this file with --onnx.")


def refuse_unknown_dynamic_axes(loaded: LoadedModel, options: ExportOptions, output_names: Sequence[str] | None
                                ) -> None:
    """Dynamic axes may name only the export's inputs and its ``output_names`` (the names the export
    gives its outputs). For any other name torch's TorchScript exporter only warns and exports every
    size static, and torch.export fails with a pytree error naming nothing: refuse it, in one wording."""
    if not options.dynamic_axes:
        return
    input_names = list(options.input_names or loaded.input_names)
    unknown = sorted(set(options.dynamic_axes) - set(input_names) - set(output_names or ()))
    if unknown:
        raise ExportError(f"The dynamic axes name {', '.join(unknown)}, which is not an input of "
                          f"{loaded.path.name} (its inputs: {', '.join(input_names)}).",
                          "Name the model's inputs in the dynamic axes, e.g. "
                          f'{{"{input_names[0] if input_names else "x"}": {{"0": "batch"}}}}.')
