"""A fix candidate tried on the failing node alone, the way OpInfo tests an op.

The values that flowed into the node while the model ran are captured once; the node becomes a
small model of its own (those values as its inputs, its constant arguments as constants). Each
candidate exports that small model, ONNX Runtime runs it, and its outputs are compared with
torch's for the same inputs. Where dims declared dynamic reach the node (the exporter says which,
``NodeSample.dynamic_dims``), the node alone is exported with them dynamic too. The cost of a
trial no longer grows with the model, and a model above 2 GB is never exported whole to try one
fix.

Where a node cannot be taken out on its own (its inputs could not be captured, it sits in a
control-flow block, the exporter captures no nodes), the exporter says why in
``NodeSamples.undecided`` (:mod:`fixport.core.exporters.base`) and ``fix --auto`` tries that
kind's candidates on the whole model.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fixport.core.checks.output_check import tolerances_for
from fixport.core.foundation.comparison import to_numpy
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.ort_session import run_on_cpu
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import Candidate
from fixport.core.statistics.output_stats import compare_output_lists
from fixport.core.words.vocabulary import ProblemReason

if TYPE_CHECKING:
    from fixport.core.exporters.base import Exporter, NodeSample


@dataclass(frozen=True)
class OtherOpsLeft:
    """The candidate replaced the node, but what it was replaced by has ops of its own to fix
    (a decomposition into an op whose ONNX function fails): the node alone cannot decide."""

    kinds: tuple[str, ...]

    def __str__(self) -> str:
        return f"on the node alone it leaves {', '.join(self.kinds)} to fix"


def verdict_on_node(exporter: Exporter, loaded: LoadedModel, sample: NodeSample, candidate: Candidate,
                    mappings: list[FixMapping], options: ExportOptions) -> str | float | None | OtherOpsLeft:
    """Export the node alone with ``mappings`` and ``candidate``, run it in ONNX Runtime and compare
    with torch: a string says why the candidate fails; otherwise the largest absolute error (None
    for a node ONNX Runtime is not asked to run, a custom-domain one). :class:`OtherOpsLeft` when
    the node is gone and only other ops, each fixable, are left."""
    node_model = LoadedModel(loaded.path, "python", sample.module, sample.inputs,
                             [f"input_{index}" for index in range(len(sample.inputs))])
    dynamic_axes = {f"input_{index}": {axis: f"input_{index}_dim_{axis}" for axis in axes}
                    for index, axes in sample.dynamic_dims.items()}
    node_options = replace(options, input_names=None, output_names=None, dynamic_axes=dynamic_axes or None,
                           custom_opsets=dict(options.custom_opsets))
    with exporter.fixes_applied([*mappings, candidate.mapping], node_options) as custom_opsets:
        node_options.custom_opsets = {**custom_opsets, **node_options.custom_opsets}
        result = exporter.export(node_model, node_options, run_check=candidate.runs_in_onnxruntime)
    left = [p for p in result.unsupported
            if candidate.runs_in_onnxruntime or p.reason != ProblemReason.RUNTIME_ERROR]
    if left and all(p.kind != candidate.mapping.target_kind and exporter.can_fix(p) for p in left):
        return OtherOpsLeft(tuple(sorted({p.display_kind for p in left})))
    if left:
        first = left[0]
        return first.message.splitlines()[0][:300] if first.message else str(first.reason)
    if not candidate.runs_in_onnxruntime:
        return None
    outputs = result.runtime_outputs
    if outputs is None:  # an exporter whose check keeps no outputs: run the node's model here
        run = run_on_cpu(result.model, [i.name for i in result.model.proto.graph.input], sample.inputs)
        if run.error:
            return f"ONNX Runtime cannot run the node alone: {run.error.splitlines()[0][:300]}"
        outputs = run.outputs
    actual = [to_numpy(value) for value in outputs or []]
    if len(actual) != len(sample.expected):
        return f"the node alone has {len(actual)} output(s) in ONNX Runtime, {len(sample.expected)} in torch"
    stats = compare_output_lists(sample.expected, actual, tolerances_for(loaded), keep_plot_data=False)
    failed = [s for s in stats if not s.passed]
    if failed:
        worst = failed[0]
        how = worst.problem or f"differs from torch by up to {worst.max_abs:.3g}"
        return f"wrong numbers on the node alone: its {worst.name} {how}"
    return max((s.max_abs for s in stats if s.max_abs is not None), default=0.0)
