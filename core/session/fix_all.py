"""Fix all and `fix --auto`: the search's run turned into project edits and per-kind rows.

The search itself is the worker's AutoFixRequest job (``core/fixing/auto_fix.py``); its result is
read as the :class:`~fixport.core.records.exporter_comparison.ExporterRun` that sweep rows and
`compare --exporters` read (``ExporterRun.from_auto_fix``), so the export options it moves to and
whether compare can run follow their one rule each. This module decides what the session and the
command line do with that run: which mappings the project gets, and one line per op kind saying
which fix was chosen (its family) or why none fitted. Nothing here touches the project until the
job has finished, so Cancel leaves it as it was.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fixport.core.exporters.capture_change_fix import diff_in
from fixport.core.project.capture_settings import describe_setting
from fixport.core.project.project import FixMapping
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_choices import CODE_CHANGE_FAMILIES, FAMILY_TRACED_VALUE_INPUT
from fixport.core.records.fix_records import last_rejection_for
from fixport.core.records.results import AutoFixResult
from fixport.core.records.runtime_cost import cost_change
from fixport.core.records.traced_sizes import pinned_dims_note
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import python_op_kind


@dataclass
class FixedKind:
    """A row for an op kind the project's fixes handle: what fixed it, and the mapping to edit."""

    label: str
    how: str  # "fixed by a template", "standard_op: aten_pad_standard", ...
    mapping: FixMapping | None = None
    fitted: bool = True  # False: Fix all found no fix; ``how`` says why


def opset_that_works(problem: UnsupportedNode, opset: int) -> int | None:
    """The opset the exporter that produced ``problem`` advises (``problem.opset_advice``, worked out
    on the worker side), when it is above ``opset``; None otherwise."""
    advice = problem.opset_advice
    return advice if advice is not None and advice > opset else None


@dataclass
class FixAllPlan:
    """What Fix all changes in the project, and what the Problems dock says per kind."""

    new_mappings: list[FixMapping] = field(default_factory=list)
    opset: int | None = None  # the opset to move to, when the search raised it
    capture_settings: list[str] = field(default_factory=list)  # the export's capture settings, when it chose one
    outcomes: list[FixedKind] = field(default_factory=list)
    compare_blocked: str = ""  # why compare cannot run on the fixed export ('' when it can)

    @property
    def changes_anything(self) -> bool:
        return bool(self.new_mappings) or self.opset is not None or bool(self.capture_settings)

    trials: str = ""  # where the candidates were tried, and how often the whole model was exported
    costs: str = ""  # the export's size and latency with the fixes, and without them where that one runs
    notes: list[str] = field(default_factory=list)  # for the Log: what each fix built for the traced sizes pins

    def summary(self) -> str:
        fitted = sum(1 for o in self.outcomes if o.fitted)
        missing = [o.label for o in self.outcomes if not o.fitted]
        opset = f", opset raised to {self.opset}" if self.opset is not None else ""
        opset += f", captured with {', '.join(self.capture_settings)}" if self.capture_settings else ""
        left = f"; no fix fitted {', '.join(missing)}" if missing else ""
        compare = f"; {self.compare_blocked}" if self.compare_blocked else "; compare can run"
        return f"Fix all: {fitted} kind(s) fixed{opset}{left}{compare}. {self.trials} {self.costs}".rstrip()


def plan_from(run: ExporterRun, existing: list[FixMapping]) -> FixAllPlan:
    """The project edits and per-kind rows for one finished `fix --auto` search."""
    result = run.auto_fix
    assert result is not None, "plan_from reads a run whose fix step ran (ExporterRun.from_auto_fix)"
    known = {(m.target_kind, m.python_op_name, m.instance) for m in existing}
    plan = FixAllPlan(new_mappings=[m for m in run.mappings
                                    if (m.target_kind, m.python_op_name, m.instance) not in known],
                      compare_blocked="" if run.compare_can_run else run.error)
    plan.trials = (f"{result.node_trials} trial(s) on the failing nodes alone, {result.whole_model_trials} on the "
                   f"whole model; the whole model exported {result.whole_model_exports} time(s).")
    plan.costs = costs_text(result)
    if result.opset_raised is not None:
        before, after = result.opset_raised
        plan.opset = after
        raised_kinds = {p.display_kind for p in result.before.unsupported} - {
            python_op_kind(c.python_op_name) if c.python_op_name else c.kind for c in result.choices}
        plan.outcomes += [FixedKind(kind, f"opset raised from {before} to {after}") for kind in sorted(raised_kinds)
                          if kind not in {p.display_kind for p in result.after.unsupported}]
    if result.capture_settings:
        plan.capture_settings = list(result.after.options.capture_settings)
        fixed_by_templates = {python_op_kind(c.python_op_name) if c.python_op_name else c.kind for c in result.choices}
        left = {p.display_kind for p in result.after.unsupported}
        plan.outcomes += [FixedKind(kind, f"capture setting {', '.join(result.capture_settings)}") for kind in
                          sorted({p.display_kind for p in result.before.unsupported} - fixed_by_templates - left)]
        plan.notes += [f"capture setting {setting}: {describe_setting(setting)} (the project's export options keep it)"
                       for setting in result.capture_settings]  # what it changed, for the Log
    by_kind = {(m.target_kind, m.python_op_name): m for m in result.mappings}
    pinned = pinned_dims_note(result.after, fix_applied=True)
    for choice in result.choices:
        label = python_op_kind(choice.python_op_name) if choice.python_op_name else choice.kind
        if choice.shape_specialised and pinned:
            plan.notes.append(f"{label}: {choice.template_id} is shape-specialised. {pinned}")
        mapping = by_kind.get((choice.kind, choice.python_op_name))
        if choice.family in CODE_CHANGE_FAMILIES and mapping is not None:  # what it changed, for the Log
            plan.notes.append(f"{label}: {choice.why}\n{diff_in(mapping.source)}".rstrip())
        family = choice.family or "template"
        runtime = "" if choice.runs_in_onnxruntime else " (ONNX Runtime cannot run it)"
        verified = ", verified on the node alone" if choice.on_node else ""
        rewrote = f", rewrote {'; '.join(r.line() for r in choice.rewrites)}" if choice.rewrites else ""
        plan.outcomes.append(FixedKind(label, f"{family}: {choice.template_id}{runtime}{verified}{rewrote}",
                                       mapping))
        plan.notes += [f"{label}: {choice.template_id} rewrote the captured graph's node {r.line()}"
                       for r in choice.rewrites]
        if choice.family == FAMILY_TRACED_VALUE_INPUT:  # what it changed: the node the trace makes instead
            plan.notes.append(f"{label}: {choice.template_id}: {choice.why}")
    for kind in dict.fromkeys(result.no_template):
        plan.outcomes.append(FixedKind(kind, _why_none_fitted(kind, result), fitted=False))
    if result.kept_best:  # the search's last state was worse than one it verified: the Log says which it kept
        plan.notes.append(f"Fix all kept an earlier state: {result.kept_best}")
    if result.stopped_at_time_limit is not None:
        plan.notes.append(f"Fix all stopped at its time limit ({result.stopped_at_time_limit:g} s); not reached: "
                          f"{', '.join(result.not_reached) or 'nothing'}")
    return plan


def costs_text(result: AutoFixResult) -> str:
    """``With the fixes: 1.2 kB, 5 nodes, 0.02 ms …; without: … (size ×1.1, latency ×1.4).``"""
    after, before = result.cost_after, result.cost_before
    if after is None:
        return ""
    text = f"With the fixes: {after.summary()}"
    if before is None:
        return text + "; the export without them does not run in ONNX Runtime."
    return f"{text}; without them: {before.summary()} ({cost_change(before, after)})."


def _why_none_fitted(kind: str, result: AutoFixResult) -> str:
    """The last rejection for ``kind`` (template, family and reason), or that nothing was offered."""
    last = last_rejection_for(kind, result.rejected)
    if last is None:
        return f"no fix: no template fits {kind} at opset {result.after.options.opset}"
    return "no fix: " + last.line().splitlines()[0][:200]
