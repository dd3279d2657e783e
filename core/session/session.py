"""The session: the open project's analysis, its caches, the selection and the fixing workflows.

It holds what the window used to: the analysis and the request it answers, the offer and op-info
caches, selection -> problem -> offers, Fix-all planning and its one autosave. It sends requests
through a :class:`~fixport.core.session.jobs.JobPort` and tells its views what happened through
:class:`~fixport.core.session.hub.EventHub` events; it imports neither Qt nor torch.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fixport.core.exporters.capture_changes import write_changed_copy
from fixport.core.exporters.profiles import profile_for, profile_for_graph
from fixport.core.exporters.trace_warnings import baked_here
from fixport.core.foundation.errors import FixportError
from fixport.core.onnx_io.op_docs import OpInfo
from fixport.core.project.project import PROJECT_SUFFIX, FixMapping, merged_optimizer_fixes
from fixport.core.records.compare_result import DEFAULT_RUNS, CompareResult
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_offers import OFFERED_FOR, FixOffer, FixOffers, offers_key
from fixport.core.records.requests import (
    AnalyzeRequest,
    AutoFixRequest,
    CompareRequest,
    FixOffersRequest,
    OpInfoRequest,
    PingRequest,
    StubRequest,
    SuggestDynamicRequest,
    SynthesizeRequest,
)
from fixport.core.records.results import AnalysisResult, AutoFixResult, DimVerdict, WorkerInfo
from fixport.core.records.runtime_cost import DEFAULT_LATENCY_RUNS
from fixport.core.records.traced_sizes import pinned_dims_note
from fixport.core.session import events
from fixport.core.session.fix_all import FixedKind, opset_that_works, plan_from
from fixport.core.session.hub import EventHub
from fixport.core.session.jobs import JobPort
from fixport.core.session.targets import TemplateTarget
from fixport.core.session.workbench import Workbench
from fixport.core.words.graph import Graph, Node
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import (
    AUTO_DTYPE,
    DEFAULT_OPSET,
    IN_THE_MODELS_CODE_REASONS,
    PYTHON_OP_KIND,
    ProblemReason,
    keeps_compare_from_running,
)

SOURCE, ONNX = "source", "onnx"  # the two panes: the source graph (any exporter's) and the ONNX graph
COMPARE_RUNS = DEFAULT_RUNS  # the example inputs and random sets, as `compare`: input-dependent bugs show up
GraphLookup = Callable[[], Mapping[str, Graph | None]]


class Session:
    """One open model or project at a time; every long job goes through ``jobs``."""

    def __init__(self, jobs: JobPort, workbench: Workbench | None = None, hub: EventHub | None = None,
                 shown_graphs: GraphLookup | None = None) -> None:
        self.jobs = jobs
        self.workbench = workbench or Workbench()
        self.events = hub or EventHub()
        # The graphs the user sees (a view may draw a re-export's traced graph before its analysis
        # ends); without a view, the analysis's own.
        self._shown_graphs = shown_graphs or self._analysed_graphs
        self.selected: tuple[str, str] | None = None  # (graph kind, node id)
        self.keep_view = False  # the running export keeps the current view
        self.compare_tolerances: dict[str, float | None] = {"rtol": None, "atol": None}
        self.compare_optimize = ""  # the optimizer guard's variants, as `compare --optimize` takes them
        self.highlight_after_export: set[str] = set()  # source nodes whose ONNX nodes the fix just made
        self.fix_outcomes: list[FixedKind] | None = None  # what the last Fix all chose per kind
        # What the worker said about an op kind depends on torch only: asked once per kind, not again
        # after every re-export that re-selects the node.
        self.op_infos: dict[str, OpInfo] = {}
        self.synthesized: dict[tuple[str, int, str], list] = {}  # (kind, opset, exporter) -> offers
        self._synthesizing: tuple[str, int, str] | None = None
        self.fix_offers: dict[tuple, list[FixOffer]] = {}  # the new kinds of fix, per problem (offers_key)
        self._problem_shown: str | None = None  # the nodeless problem the Template dock offers fixes for
        self.analyzed_request: AnalyzeRequest | None = None  # what the held analysis answers
        self._submitted_analysis: AnalyzeRequest | None = None
        for request_type, handler in self.result_handlers().items():
            jobs.on_finished(request_type, handler)

    def result_handlers(self) -> dict[type, Callable[[Any], None]]:
        """Which session method takes each job's result."""
        return {PingRequest: self._worker_ready, AnalyzeRequest: self._analysis_finished,
                CompareRequest: self._compare_finished, OpInfoRequest: self._op_info_finished,
                StubRequest: lambda source: self.events.emit(events.StubReady(source)),
                SynthesizeRequest: self._synthesized_finished, AutoFixRequest: self._fix_all_finished,
                FixOffersRequest: self._fix_offers_finished,
                SuggestDynamicRequest: self._dims_suggested}

    # ---- opening ----
    def open(self, path: str | Path, export_options: dict[str, Any] | None = None) -> bool:
        """Open a model file, checkpoint folder or project file and export it (a model with
        ``export_options``, when given). False, with an ErrorRaised event, when it cannot be opened."""
        path = Path(path)
        try:
            if path.name.endswith(PROJECT_SUFFIX) or path.suffix == ".json":
                self.workbench.open_project(path)
            else:
                self.workbench.open_model(path)
                if export_options:
                    self.workbench.set_project_field("export_options", dict(export_options))
        except FixportError as error:
            self.events.emit(events.ErrorRaised(error))
            return False
        self.selected = None
        self.fix_outcomes = None
        self._log(f"Opened {path}")
        for note in self.workbench.project.load_notes:  # once: saving keeps the converted text
            self._log(f"Note: {note}")
        autosave = self.workbench.autosave_file() if self.workbench.has_newer_autosave() else None
        self.events.emit(events.Opened(path, Path(self.workbench.project.model_path), autosave))
        self.reexport(keep_view=False)
        return True

    def open_changed_copy(self) -> bool:
        """Write a copy of the model file with the changes proposed for its capture failures beside
        it, and open that copy with the same options (the original is never changed)."""
        project, analysis = self.workbench.project, self.workbench.analysis
        if project is None or analysis is None:
            return False
        try:
            written = write_changed_copy(Path(project.model_path), analysis.unsupported)
        except OSError as error:
            self.events.emit(events.ErrorRaised(FixportError(f"Could not write the changed copy: {error}",
                                                             "Check that the model's folder is writable.")))
            return False
        if written is None:
            return False
        self._log(f"Wrote {written} with the proposed changes; opening it.")
        return self.open(written, export_options=project.export_options)

    def reexport(self, keep_view: bool = True, output: str | None = None) -> Any:
        """Export the project as it stands (``output``: also write the ONNX file there)."""
        if self.workbench.project is None:
            return None
        try:
            request = self.workbench.analyze_request(output)
        except FixportError as error:  # a hand-edited project's inputs or shapes to check
            self.events.emit(events.ErrorRaised(error))
            return None
        self.keep_view = keep_view
        self._submitted_analysis = request
        self.events.emit(events.ExportStarted(keep_view))
        return self.jobs.submit(request)

    def _analysis_finished(self, result: AnalysisResult) -> None:
        self.workbench.analysis = result
        self.analyzed_request = self._submitted_analysis
        project = self.workbench.project
        onnx_graph = result.onnx_graph
        created = frozenset(n.id for n in onnx_graph.nodes if self.highlight_after_export & set(n.origin)) \
            if onnx_graph is not None else frozenset()
        self.highlight_after_export = set()
        fixed = [m.label for m in project.mappings] if project else []
        self.events.emit(events.AnalysisArrived(result, self.keep_view, created, fixed, self.fix_outcomes))

    def reselect(self) -> None:
        """After an analysis: the selected node again (its docks follow the new export), or the
        first problem, with its templates, where nothing was selected."""
        result = self.workbench.analysis
        if result is None:
            return
        if self.selected is not None and (graph := self.graph(self.selected[0])) is not None \
                and self.selected[1] not in graph.node_by_id:
            # the fix replaced the node (a decomposition): its docks would describe what is gone
            self.selected = None
            self.events.emit(events.SelectionCleared())
        shown, self._problem_shown = self._problem_shown, None
        if self.selected is not None:
            self.select_node(*self.selected)
        elif result.unsupported:  # start where the work is
            self.activate_problem(result.unsupported[0])
        elif shown is not None:  # the capture failure the dock offered fixes for is gone
            self.events.emit(events.TargetChanged(None))

    # ---- edits ----
    def set_project_field(self, name: str, value: Any, why: str = "") -> None:
        self.workbench.set_project_field(name, value)
        self.events.emit(events.ProjectEdited(why or name))

    def set_export_option(self, name: str, value: Any, why: str = "") -> None:
        self.workbench.set_export_option(name, value)
        self.events.emit(events.ProjectEdited(why or name))

    def choose_checkpoint(self, task: str, component: str, dtype: str = AUTO_DTYPE) -> None:
        """Export the checkpoint's ``task`` and ``component`` (a new task: its first component) with its
        weights in ``dtype`` ("auto": the checkpoint's own)."""
        if self.workbench.project is None:
            return
        with self.workbench.batched_edits():
            self.workbench.set_project_field("task", task)
            self.workbench.set_project_field("component", component or None)
            self.workbench.set_project_field("dtype", None if dtype in ("", AUTO_DTYPE) else dtype)
        self._log(f"Checkpoint: task {task}, component {component or '(the first)'}, dtype {dtype or AUTO_DTYPE}; "
                  "exporting again.")
        self.reexport(keep_view=False)

    def raise_opset(self, opset: int) -> None:
        """"Raise the opset to N": set it and export again."""
        if self.workbench.project is None:
            return
        self.set_export_option("opset", opset)
        self._log(f"Raised the opset to {opset}; re-exporting.")
        self.reexport(keep_view=True)

    def apply_mapping(self, mapping: FixMapping) -> None:
        """Give the project ``mapping`` (autosaved) and export again, marking what the fix makes."""
        if self.workbench.project is None:
            return
        # Text pasted in an older template form (a TEMPLATE dict, injected names) is kept converted.
        mapping, note = mapping.in_current_form(profile_for(self.workbench.exporter_name).name)
        if note:
            self._log(f"Note: the fix for {mapping.label} ({mapping.template_id}): {note}.")
        self.workbench.apply_mapping(mapping)
        self.fix_outcomes = None  # the project's fixes are the user's own from here on
        analysis = self.workbench.analysis
        self.highlight_after_export = {mapping.instance} if mapping.instance else {
            p.instance for p in (analysis.unsupported if analysis else []) if p.kind == mapping.target_kind}
        self.events.emit(events.ProjectEdited("mappings"))
        shown = self._selected_source_node() if note else None
        if shown is not None:  # the Template dock shows the fix as the project keeps it
            self._offer_templates(shown)
        self._log(f"Applied {mapping.template_id} to {mapping.label}; re-exporting.")
        self.reexport(keep_view=True)

    def _selected_source_node(self) -> Node | None:
        """The source-graph node of the selection (an ONNX node's origin), None where there is none."""
        graph = self.graph(self.selected[0]) if self.selected else None
        node = graph.node_by_id.get(self.selected[1]) if graph and self.selected else None
        return node if node is None or self.selected[0] == SOURCE else self.origin_node(node)

    def remove_mapping(self, mapping: FixMapping) -> None:
        if self.workbench.project is None:
            return
        self.workbench.remove_mapping(mapping.target_kind, mapping.python_op_name, mapping.instance)
        self.fix_outcomes = None
        self.events.emit(events.ProjectEdited("mappings"))
        self._log(f"Removed the fix for {mapping.label}; re-exporting.")
        self.reexport(keep_view=True)

    def restore_autosave(self) -> bool:
        """Take the project's newer autosave (unsaved edits) and export it."""
        if not self.workbench.restore_autosave():
            return False
        self._log("Restored unsaved edits from the autosave.")
        self.events.emit(events.ProjectEdited("restored"))
        self.reexport(keep_view=True)
        return True

    def save(self, path: str | Path | None = None) -> Path:
        """Save the project (to ``path``, or where it was last saved) and say so."""
        saved = self.workbench.save(path)
        self._log(f"Saved project {saved}")
        self.events.emit(events.ProjectSaved(saved))
        return saved

    def discard_autosave(self) -> None:
        """Drop the autosave's unsaved edits the user turned down."""
        self.workbench.discard_autosave()
        self.events.emit(events.AutosaveDiscarded())

    # ---- Fix all ----
    def start_fix_all(self) -> Any:
        """The `fix --auto` search for every problem; the project changes only when it finishes."""
        if self.workbench.project is None:
            return None
        try:
            request = self.workbench.analyze_request()
        except FixportError as error:
            self.events.emit(events.ErrorRaised(error))
            return None
        self._log("Fix all: searching a fix for every problem…")
        held = self.workbench.analysis if request == self.analyzed_request else None  # the search starts there
        return self.jobs.submit(AutoFixRequest(request.model, request.options, request.mappings, analysis=held,
                                               other_shapes=request.other_shapes, latency_runs=DEFAULT_LATENCY_RUNS))

    def _fix_all_finished(self, result: AutoFixResult) -> None:
        """The chosen mappings and options go into the project with one autosave; the search's last
        analysis is the export of the project as it now stands, so nothing is exported again."""
        project = self.workbench.project
        if project is None:
            return
        # The window's project keeps following the exporter's default opset until the user picks one
        run = ExporterRun.from_auto_fix(result, project.export_options, pin_opset=False)
        plan = plan_from(run, project.mappings)
        with self.workbench.batched_edits():
            for mapping in plan.new_mappings:
                self.workbench.apply_mapping(mapping)
            for name, value in run.options.items():
                if project.export_options.get(name) != value:
                    self.workbench.set_export_option(name, value)
        self.fix_outcomes = plan.outcomes
        self._log(plan.summary(), "\n".join([*plan.notes, *(r.line() for r in result.rejected),
                                             *(f"tried on the whole model: {why}" for why in result.whole_model_why)]))
        self.events.emit(events.ProjectEdited("fix all"))
        self.keep_view = True
        self._submitted_analysis = self.workbench.analyze_request()
        self._analysis_finished(result.after)
        self.events.emit(events.FixAllApplied(plan))

    # ---- other jobs ----
    def start_compare(self, provider: str = "cpu", runs: int = COMPARE_RUNS, precision: str = "strict") -> Any:
        """Compare torch and ONNX Runtime with the current fixes."""
        project, analysis = self.workbench.project, self.workbench.analysis
        if project is None:
            return None
        # Nodes ONNX Runtime cannot run (custom domains) still compare, through reference kernels.
        # A mismatch is what Compare explains: it never blocks it.
        blocking = [p for p in analysis.unsupported if keeps_compare_from_running(p.reason)] if analysis else []
        try:
            if blocking and analysis.source_kind != "onnx":
                raise FixportError(f"Nothing to compare yet: {len(blocking)} node(s) are still unsupported.",
                                   "Fix them first (pick a node in Problems, then a template).")
            other_shapes = project.other_shapes()
        except FixportError as error:
            self.events.emit(events.ErrorRaised(error))
            return None
        return self.jobs.submit(CompareRequest(
            self.workbench.model_request(), dict(project.export_options), list(project.mappings), provider=provider,
            runs=runs, rtol=self.compare_tolerances.get("rtol"), atol=self.compare_tolerances.get("atol"),
            precision=precision, other_shapes=other_shapes, optimize=self.compare_optimize))

    def _compare_finished(self, result: CompareResult) -> None:
        self.workbench.comparison = result
        fixes = result.optimizers.fixes if result.optimizers is not None else []
        if fixes and self.workbench.project is not None:  # saved as `compare --project --optimize` saves them
            merged = merged_optimizer_fixes(self.workbench.project.optimizer_fixes, fixes)
            self.set_project_field("optimizer_fixes", merged, "optimizer fixes")
            self._log(f"Compare: {len(fixes)} optimizer fix(es) saved in the project: "
                      + "; ".join(fix.summary() for fix in fixes))
        self.events.emit(events.CompareArrived(result))

    def start_suggest_dynamic(self) -> Any:
        """Which input dims could be declared dynamic (one export per dim)."""
        project = self.workbench.project
        if project is None:
            return None
        self._log("Suggest dynamic dims: exporting with each input dim dynamic in turn…")
        return self.jobs.submit(SuggestDynamicRequest(self.workbench.model_request(), dict(project.export_options),
                                                      list(project.mappings)))

    def _dims_suggested(self, verdicts: list[DimVerdict]) -> None:
        self.events.emit(events.DimsSuggested(verdicts))

    def request_stub(self, target: TemplateTarget) -> Any:
        """A template stub for ``target``'s op, generated from its schema by the worker."""
        model = self.workbench.model_request() if self.workbench.project else None
        return self.jobs.submit(StubRequest(target.kind, target.opset, list(target.input_types),
                                            target.python_op_name, model, target.exporter.name))

    def _worker_ready(self, info: WorkerInfo) -> None:
        self._log(f"Worker ready (torch {info.torch}, onnx {info.onnx}, onnxruntime {info.onnxruntime}).")
        self.events.emit(events.WorkerReady(info))

    # ---- selection -> problem -> offers ----
    def graph(self, kind: str) -> Graph | None:
        return self._shown_graphs().get(kind)

    def _analysed_graphs(self) -> dict[str, Graph | None]:
        analysis = self.workbench.analysis
        return {SOURCE: analysis.source_graph, ONNX: analysis.onnx_graph} if analysis else {}

    def select_node(self, kind: str, node_id: str, from_pane: bool = False) -> None:
        """Select a node: its source node's problem in Problems, its fixes offered, the Inspector."""
        self.selected = (kind, node_id)
        graph = self.graph(kind)
        node = graph.node_by_id.get(node_id) if graph else None
        if node is None:
            return
        source_node = node if kind == SOURCE else self.origin_node(node)
        self.events.emit(events.NodeSelected(kind, node_id, source_node.id if source_node else None, from_pane))
        if source_node is not None:
            self._offer_templates(source_node)
            if source_node.kind not in self.op_infos:
                self.jobs.submit(OpInfoRequest(source_node.kind))
        else:
            self.events.emit(events.TargetChanged(None))
        self._show_node(kind, node_id)

    def activate_problem(self, problem: UnsupportedNode) -> None:
        """A problem picked in Problems: its node selected, or the problem itself shown when it has none."""
        graph = self.graph(SOURCE)
        if problem.reason == ProblemReason.RUNTIME_ERROR and problem.onnx_node:
            self.select_node(ONNX, problem.onnx_node)
        elif problem.instance and graph is not None and problem.instance in graph.node_by_id:
            self.select_node(SOURCE, problem.instance)
        else:  # a capture failure or the export's own: no node to select
            self.events.emit(events.ProblemShown(problem))
            self._offer_for_problem(problem)

    def node_for_mapping(self, mapping: FixMapping) -> Node | None:
        """One source node a fixed kind's mapping applies to (its own node, or the first of its kind)."""
        graph = self.graph(SOURCE)
        if graph is None:
            return None
        return graph.node_by_id.get(mapping.instance or "") or next(
            (n for n in graph.nodes if n.kind == mapping.target_kind and (mapping.python_op_name or None)
             in (None, n.attributes.get("name"))), None)

    def show_fix_without_node(self, mapping: FixMapping) -> None:
        """A fix no node of the graph stands for (the model's code changed for the capture): the
        Template dock shows it, its source with the diff of what it changes."""
        target = TemplateTarget(mapping.target_kind, mapping.instance or "", mapping.python_op_name, self.opset, [],
                                exporter=profile_for(self.workbench.exporter_name))
        self.events.emit(events.TargetChanged(target, mapping))

    def origin_node(self, onnx_node: Node) -> Node | None:
        graph = self.graph(SOURCE)
        if graph is None or not onnx_node.origin:
            return None
        return graph.node_by_id.get(onnx_node.origin[0])

    def problem_for(self, instance: str) -> UnsupportedNode | None:
        analysis = self.workbench.analysis
        return next((p for p in analysis.unsupported if p.instance == instance), None) if analysis else None

    @property
    def opset(self) -> int:
        return self.workbench.opset or DEFAULT_OPSET

    def _show_node(self, kind: str, node_id: str) -> None:
        graph = self.graph(kind)
        node = graph.node_by_id.get(node_id) if graph else None
        if graph is None or node is None:
            return
        source_node = node if kind == SOURCE else self.origin_node(node)
        problem = self.problem_for(source_node.id) if source_node else None
        analysis = self.workbench.analysis
        if problem is None and kind == ONNX and analysis is not None:
            problem = next((p for p in analysis.unsupported if p.onnx_node == node_id), None)
        op_info = self.op_infos.get(source_node.kind) if source_node else None
        baked = baked_here(analysis.warnings, self.graph(SOURCE), source_node) if analysis and source_node else None
        source = self.graph(SOURCE)  # the exporter whose graphs are shown names them
        exporter = (profile_for_graph(source.kind) if source else None) or profile_for(self.workbench.exporter_name)
        self.events.emit(events.NodeShown(graph, node, source_node is not None, problem, op_info, self.opset, baked,
                                          exporter))

    def target_for(self, source_node: Node) -> TemplateTarget:
        """What the Template dock offers fixes for when ``source_node`` is selected."""
        python_op = source_node.attributes.get("name") if source_node.kind == PYTHON_OP_KIND else None
        graph = self.graph(SOURCE)
        input_types = [graph.value(v).describe() for v in source_node.inputs] if graph else []
        opset = self.opset
        problem = self.problem_for(source_node.id)
        in_model_code = problem is not None and problem.reason in IN_THE_MODELS_CODE_REASONS
        return TemplateTarget(
            source_node.kind, source_node.id, python_op or None, opset, input_types,
            suggested_opset=opset_that_works(problem, opset) if problem else None,
            exporter=profile_for(self.workbench.exporter_name), not_for_templates=(
                f"No template fixes this ({problem.reason.description}): it comes from the model's own code. "
                + ("The fixes listed first change it while exporting; the Inspector says what to change."
                   if problem.reason in OFFERED_FOR else "The Inspector says what to change.")
                if in_model_code else ""),
            pinned_dims=pinned_dims_note(self.workbench.analysis))

    def _offer_templates(self, source_node: Node) -> None:
        target = self.target_for(source_node)
        project = self.workbench.project
        self.events.emit(events.TargetChanged(target, project.mapping_for(source_node) if project else None))
        problem = self.problem_for(source_node.id)
        if problem is not None:
            self._request_fix_offers(problem)
        if target.python_op_name:
            return
        key = (target.kind, target.opset, target.exporter.name)
        if key in self.synthesized:
            self._show_synthesized(self.synthesized[key])
        else:  # generated fixes need torch: the worker makes them, the dock shows the templates first
            self._synthesizing = key
            self.jobs.submit(SynthesizeRequest(*key), topic="synthesize")

    def _offer_for_problem(self, problem: UnsupportedNode) -> None:
        """A problem with no node (a capture failure): the Template dock offers its fixes alone."""
        if problem.reason not in OFFERED_FOR:
            return
        target = TemplateTarget(problem.kind, problem.instance, None, self.opset, [],
                                exporter=profile_for(self.workbench.exporter_name), fixes_only=True)
        self._problem_shown = problem.instance
        self.events.emit(events.TargetChanged(target, None))
        self._request_fix_offers(problem)

    def _request_fix_offers(self, problem: UnsupportedNode) -> None:
        """The new kinds of fix for ``problem`` (code change, graph rewrite, capture setting): the
        worker makes them from `fix --auto`'s candidates; the dock lists them beside the templates."""
        if problem.reason not in OFFERED_FOR:
            return
        known = self.fix_offers.get(offers_key(problem, self.opset, self.workbench.exporter_name))
        if known is not None:
            self.events.emit(events.FixOffersFound(problem.instance, known))
        else:
            self.jobs.submit(FixOffersRequest(problem, self.opset, self.workbench.exporter_name), topic="fix_offers")

    def _fix_offers_finished(self, answer: FixOffers) -> None:
        self.fix_offers[answer.key()] = answer.offers
        self.events.emit(events.FixOffersFound(answer.problem.instance, answer.offers))

    def apply_capture_setting(self, setting: str) -> None:
        """Add capture ``setting`` to the export options (as Fix all chooses one) and export again."""
        project = self.workbench.project
        if project is None:
            return
        settings = list(project.export_options.get("capture_settings") or [])
        if setting not in settings:
            self.set_export_option("capture_settings", [*settings, setting], "capture setting")
        self.fix_outcomes = None
        self._log(f"Applied the capture setting {setting}; re-exporting.")
        self.reexport(keep_view=True)

    def _synthesized_finished(self, offers: list) -> None:
        if self._synthesizing is not None:
            self.synthesized[self._synthesizing] = offers
            self._synthesizing = None
        self._show_synthesized(offers)

    def _show_synthesized(self, offers: list) -> None:
        if offers:
            self.events.emit(events.OffersSynthesized(offers[0].template.fits[0], offers))

    def _op_info_finished(self, info: OpInfo) -> None:
        self.op_infos[info.kind] = info
        if self.selected is not None:
            self._show_node(*self.selected)

    def _log(self, text: str, details: str = "") -> None:
        self.events.emit(events.Logged(text, details))
