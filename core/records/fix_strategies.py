"""The order `fix --auto` tries fixes in: one list of strategies, written once for every exporter.

torch.onnx tries its capture strategies as an ordered list of objects
(``torch/onnx/_internal/exporter/_capture_strategies.py``); a fix search is the same shape. For a
problem, each strategy in :data:`FIX_STRATEGIES` gives its candidates in turn, and ``fix --auto``
keeps the first candidate whose trial passes. Each exporter implements a strategy (a function
giving that strategy's candidates for one problem) or declines it (it has no entry): the
TorchScript exporter declines only what only torch.export has (a capture that stops on a value), the
dynamo exporter declines what only a TorchScript graph has (torch_lib replay: torch_lib is its own
registry). A new strategy is added here, in its
place, and implemented by the exporters that can.

No torch import: the front ends and the worker read the same list.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from fixport.core.records.fix_choices import Candidate


@dataclass(frozen=True)
class FixStrategy:
    """One way to fix an op, tried in its place in :data:`FIX_STRATEGIES`."""

    name: str
    description: str
    custom_runtime: bool = False  # its fixes make nodes ONNX Runtime cannot run: tried only when allowed


GRAPH_REWRITE = FixStrategy(
    "graph_rewrite", "for a failure in torch.onnx's own passes over the captured graph: an FX pass at the failing "
    "node before they run (the integer operand of float arithmetic cast to the float type, so type promotion finds "
    "an overload)")
TRACED_VALUE_INPUT = FixStrategy(
    "traced_value_input", "for an input whose value the trace bakes into a resize (float(scale)): a generated "
    "autograd.Function whose symbolic passes the runtime value to Resize, so the input stays an input")
TRACED_SIZE_CHANGE = FixStrategy(
    "traced_size_change", "for a size the TorchScript trace folds into a constant at a line it warns about "
    "(math.ceil(n / s)): the line changed to integer arithmetic the trace keeps, in the model's code or a "
    "library's, for the trace only")
CAPTURE_CODE_CHANGE = FixStrategy(
    "capture_code_change", "for a capture that stops where the code depends on a tensor's value: the line changed "
    "mechanically (torch.where, torch._check, .item()) in the model's code or a library's, for the capture only")
KERNEL_TYPES = FixStrategy(
    "kernel_types", "for a node ONNX Runtime has no kernel for at its types: torch's own conversion with the "
    "inputs cast to the dtypes torch traced them with")
STANDARD_OP = FixStrategy(
    "standard_op", "the ONNX op of the same name and inputs, found by itself (aten::cosh -> Cosh)")
HAND_WRITTEN = FixStrategy(
    "hand_written", "hand-written templates made for the op (or its namespace) that run in ONNX Runtime and keep "
    "shapes open")
TORCHLIB_BRIDGE = FixStrategy("torchlib_bridge", "onnxscript's torch_lib implementation, replayed at the opset")
HAND_WRITTEN_AT_TRACED_SIZES = FixStrategy(
    "hand_written_at_traced_sizes", "hand-written templates made for the op that are built for the traced sizes "
    "(after every fix that keeps shapes open)")
DECOMPOSITION = FixStrategy(
    "decomposition", "a decomposition of the op into ops the exporter handles: torch's, replayed, or Fixport's own "
    "of the op the exporter decomposed into this one")
INLINED = FixStrategy(
    "inlined_implementation", "the op's own implementation inlined: a custom op's Python function, or the "
    "decomposition the exporter runs; an error check that returns nothing, dropped")
REWRITTEN_IMPLEMENTATION = FixStrategy(
    "rewritten_implementation", "a custom op's implementation with the lines that depend on a tensor's value "
    "rewritten, made on the node's values")
MATERIALISED = FixStrategy(
    "static_materialisation", "for an op linear in its inputs: the matrix torch computes at the node's shapes "
    "(shape-specialised)")
GENERIC = FixStrategy("generic", "generic templates (fits: *) that run in ONNX Runtime")
HAND_WRITTEN_CUSTOM_RUNTIME = FixStrategy(
    "hand_written_custom_runtime", "hand-written templates made for the op that ONNX Runtime cannot run",
    custom_runtime=True)
CUSTOM_DOMAIN = FixStrategy(
    "custom_domain", "a custom-domain node: the target runtime must implement it", custom_runtime=True)

FIX_STRATEGIES: tuple[FixStrategy, ...] = (
    GRAPH_REWRITE,
    TRACED_VALUE_INPUT,
    TRACED_SIZE_CHANGE,
    CAPTURE_CODE_CHANGE,
    KERNEL_TYPES,
    STANDARD_OP,
    HAND_WRITTEN,
    TORCHLIB_BRIDGE,
    HAND_WRITTEN_AT_TRACED_SIZES,
    DECOMPOSITION,
    INLINED,
    REWRITTEN_IMPLEMENTATION,
    MATERIALISED,
    GENERIC,
    HAND_WRITTEN_CUSTOM_RUNTIME,
    CUSTOM_DOMAIN,
)

OffersT = TypeVar("OffersT")
# An exporter's implementation of one strategy: its candidates, from what it prepared for one problem.
StrategyTable = Mapping[FixStrategy, Callable[[OffersT], list[Candidate]]]


def candidates_in_order(implemented: StrategyTable[OffersT], offers: OffersT, allow_custom: bool) -> list[Candidate]:
    """The candidates of every strategy the exporter implements (``implemented``, called with what
    it prepared for one problem: ``offers``), in :data:`FIX_STRATEGIES`' order; those that make
    nodes ONNX Runtime cannot run only when ``allow_custom``."""
    unknown = [s.name for s in implemented if s not in FIX_STRATEGIES]
    if unknown:
        raise ValueError(f"not in FIX_STRATEGIES: {', '.join(unknown)}")
    found: list[Candidate] = []
    for strategy in FIX_STRATEGIES:
        implementation = implemented.get(strategy)
        if implementation is not None and (allow_custom or not strategy.custom_runtime):
            found += implementation(offers)
    return found
