"""Numbers you can trust: a clean export's ONNX Runtime outputs against torch's, on the example inputs.

The analyze job calls :func:`mismatched_outputs` once nothing is left unsupported, so `check`
never gives a clean bill of health to a model whose ONNX computes something else. It reuses the
comparison's pieces (``flatten_outputs``, ``compare_arrays``, the per-dtype tolerance table), as
`compare` does; `compare` then finds the first divergent node. A model file's ``fix_tolerance``
replaces the absolute tolerance, as `fix --auto`'s verification holds its fixes to it
(:func:`tolerances_for`, which ``core/fixing/node_trials.py`` uses too).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from fixport.core.checks.low_precision import rounding_note, rounding_only
from fixport.core.foundation.comparison import flatten_outputs, to_numpy
from fixport.core.foundation.session_feeds import feeds_for
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.onnx_io.ort_session import ORT_LOG_FATAL_ONLY, create_session
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.statistics.output_stats import OutputStats, compare_output_lists, worst_abs
from fixport.core.words.graph import Graph, Node
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

OUTPUT_KIND = "onnx::output"  # a mismatch no TorchScript node can be named for


def compare_outputs(loaded: LoadedModel, model: OnnxModel | str, tolerances: ToleranceTable | None = None,
                    runtime_outputs: list[Any] | None = None) -> list[OutputStats]:
    """Every output of ``model`` (run in ONNX Runtime on CPU, unless ``runtime_outputs`` are that
    run's already) against torch, on the example inputs."""
    actual = runtime_outputs if runtime_outputs is not None else onnx_outputs(loaded, model)
    return compare_output_lists(torch_outputs(loaded), actual, tolerances or ToleranceTable(), keep_plot_data=False)


def onnx_outputs(loaded: LoadedModel, model: OnnxModel | str) -> list[Any]:
    """``model``'s outputs in ONNX Runtime on CPU, on the example inputs."""
    session = create_session(model, "cpu", log_severity=ORT_LOG_FATAL_ONLY).session
    return session.run(None, feeds_for(session, loaded.input_names, [to_numpy(t) for t in loaded.example_inputs]))


def torch_outputs(loaded: LoadedModel) -> list[tuple[str, np.ndarray]]:
    """torch's flattened outputs on the example inputs, computed once per loaded model and inputs:
    a re-export after Apply changes the ONNX side only."""
    inputs, outputs = loaded.memo.get("torch_outputs", (None, None))
    if inputs is not loaded.example_inputs:
        with torch.no_grad():
            outputs = flatten_outputs(loaded.module(*loaded.example_inputs))
        loaded.memo["torch_outputs"] = (loaded.example_inputs, outputs)
    return outputs


def tolerances_for(loaded: LoadedModel) -> ToleranceTable:
    """The per-dtype table; a model file's declared ``fix_tolerance`` is the absolute tolerance, as
    `fix --auto`'s verification holds its fixes to (so the two never disagree)."""
    declared = loaded.settings.get("fix_tolerance")
    return ToleranceTable(atol=float(declared) if declared is not None else None)


def mismatched_outputs(loaded: LoadedModel, model: OnnxModel, onnx_graph: Graph,
                       source_graph: Graph | None, runtime_outputs: list[Any] | None = None,
                       ) -> tuple[list[UnsupportedNode], float | None, list[str]]:
    """A ``mismatch`` problem per output beyond tolerance (a crash while comparing is a problem
    too), the largest absolute difference when every output was compared, and notes (a float16
    output whose difference is float16's own rounding passes, and is noted; so does one that matches up
    to the order of tied elements)."""
    tolerances = tolerances_for(loaded)
    try:
        actual = runtime_outputs if runtime_outputs is not None else onnx_outputs(loaded, model)
        stats = compare_outputs(loaded, model, tolerances, actual)
        failing = [index for index, output in enumerate(stats) if not output.passed]
        rounding = rounding_only(loaded.module, loaded.example_inputs, torch_outputs(loaded), actual,
                                 [stats[index] for index in failing]) if failing else {}
    except Exception as exc:  # torch or ORT failing here is a Fixport bug: report it, do not crash `check`
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        return [UnsupportedNode(
            kind=OUTPUT_KIND, instance="", reason=ProblemReason.RUNTIME_ERROR, scope="", source="",
            message=f"Comparing ONNX Runtime with torch failed ({type(exc).__name__}: {first_line}); "
                    "this is a Fixport bug, please report it with the model.")], None, []
    model_name = Path(loaded.path).name
    failing = [index for index in failing if stats[index].name not in rounding]
    unstable = _outputs_torch_does_not_repeat(loaded, failing, tolerances) if failing else {}
    problems = []
    for index in failing:
        if index in unstable:
            problems.append(_random_output_problem(unstable[index], source_graph))
            continue
        onnx_output = onnx_graph.outputs[index] if index < len(onnx_graph.outputs) else ""
        problems.append(_mismatch_problem(stats[index], onnx_output, onnx_graph, source_graph, model_name))
    tied = [output.tied_order for output in stats if output.tied_order]
    notes = [rounding_note(list(rounding.values()), "at the traced shape")] if rounding else []
    return problems, worst_abs(stats), [*notes, *tied]


# Ops that draw random numbers (in-place forms end in "_"): torch and ONNX Runtime draw different ones.
# Not dropout: a model in eval mode traces it as the identity.
RANDOM_OPS = frozenset({"rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm",
                        "bernoulli", "normal", "multinomial", "uniform", "exponential", "poisson",
                        "rrelu_with_noise", "random", "cauchy", "log_normal", "geometric"})


def _outputs_torch_does_not_repeat(loaded: LoadedModel, indices: list[int], tolerances: ToleranceTable,
                                   ) -> dict[int, OutputStats]:
    """Of the outputs ``indices``, those a second torch run on the same inputs does not reproduce
    (by the same tolerances): a random model, which no export can match."""
    first = torch_outputs(loaded)
    try:
        with torch.no_grad():
            second = flatten_outputs(loaded.module(*loaded.example_inputs))
    except Exception:  # a model that cannot run twice (state kept between calls): no verdict
        return {}
    again = compare_output_lists(first, [array for _, array in second], tolerances, keep_plot_data=False)
    return {index: again[index] for index in indices if index < len(again) and not again[index].passed}


def _random_output_problem(again: OutputStats, source_graph: Graph | None) -> UnsupportedNode:
    """The output changes between two torch runs; named after the first op that draws random numbers."""
    drawing = next((node for node in (source_graph.nodes if source_graph else [])
                    if node.kind.split("::")[-1].split(".")[0].rstrip("_") in RANDOM_OPS), None)
    how = again.problem or f"max abs {again.max_abs:.3g}"
    where = (f"it draws random numbers ({drawing.kind} at {drawing.source or drawing.scope or 'the model'}), "
             if drawing else "it draws random numbers or keeps state between calls, ")
    message = (f"torch's own output {again.name} changes from run to run on the same inputs ({how} between two "
               f"torch runs): {where}so ONNX Runtime cannot match it and no fix can. Make the randomness an "
               "input of forward() (pass the noise in), or turn it off for export, and check again.")
    return UnsupportedNode(
        kind=drawing.kind if drawing else OUTPUT_KIND, instance=drawing.id if drawing else "",
        reason=ProblemReason.RANDOM_OUTPUT, message=message, scope=drawing.scope if drawing else "",
        source=drawing.source if drawing else "")


def output_origin(onnx_graph: Graph, source_graph: Graph | None, onnx_output: str) -> tuple[Node | None, Node | None]:
    """The ONNX node that produces ``onnx_output``, and the source-graph node it came from."""
    producer_id = onnx_graph.producer_of.get(onnx_output) if onnx_output else None
    producer = onnx_graph.node_by_id.get(producer_id) if producer_id else None
    origin = (source_graph.node_by_id.get(producer.origin[0])
              if producer is not None and producer.origin and source_graph is not None else None)
    return producer, origin


def _mismatch_problem(output: OutputStats, onnx_output: str, onnx_graph: Graph, source_graph: Graph | None,
                      model_name: str) -> UnsupportedNode:
    detail = output.problem or (f"max abs {output.max_abs:.3g}, {output.mismatch_count} of {output.element_count} "
                                f"elements beyond tolerance (rtol {output.rtol:g}, atol {output.atol:g} "
                                f"for {output.dtype})")
    producer, origin = output_origin(onnx_graph, source_graph, onnx_output)
    where = f"; it comes out of {origin.kind} (ONNX {producer.name or producer.id})" if origin else ""
    message = (f"Output {output.name} of ONNX Runtime differs from torch's: {detail}{where}. The error may start "
               f"earlier: `python main.py compare {model_name}` names the first divergent node.")
    return UnsupportedNode(
        kind=origin.kind if origin else OUTPUT_KIND, instance=origin.id if origin else "",
        reason=ProblemReason.MISMATCH, message=message, scope=origin.scope if origin else "",
        source=origin.source if origin else "", onnx_node=producer.id if producer is not None else "",
        python_op_name=str(origin.attributes.get("name", "")) if origin and origin.kind == "prim::PythonOp" else "")
