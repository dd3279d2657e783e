"""onnxscript's optimizer, its multi-output rewrite rules tried only at nodes they can start from.

torch.onnx's optimizer (onnxscript's ``optimize_ir``) tries every rewrite rule at every node. For a
rule whose pattern has several output nodes (``SlicesSplit``: two Slices of one value into a
Split), onnxscript's simple matcher first indexes the whole graph by op, and only then finds that
the node is not even the pattern's first op: once per node, so the graph is walked N times, most
of the optimizer's time on a decoder of thousands of nodes.

While :func:`multi_output_rules_prefiltered` is active, such a rule fails at once at a node whose
op or domain the pattern's first output node does not take. Every combination the matcher would
have tried starts with that very check on that very node, so the match fails there either way:
the optimized model is the same, node for node (tests/test_rewrite_prefilter.py holds it to that).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def multi_output_rules_prefiltered() -> Iterator[bool]:
    """Inside: the pre-filter on onnxscript's simple pattern matcher. Yields whether it is on (off
    where this onnxscript's matcher lacks the names it relies on, and the optimizer runs as it is)."""
    matcher_class, failed_match = _matcher_names()
    if matcher_class is None:
        yield False
        return
    original = matcher_class.match

    def match(self: Any, model: Any, graph_or_function: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        pattern = self.pattern
        if not pattern.has_single_output_node and kwargs.get("tracer") is None:
            first = pattern.output_nodes[0]
            if not (first.op.matches(node.op_type) and first.domain.matches(node.domain)):
                return failed_match().fail("Not the pattern's first output op.", node)
        return original(self, model, graph_or_function, node, *args, **kwargs)

    matcher_class.match = match
    try:
        yield True
    finally:
        matcher_class.match = original


def _matcher_names() -> tuple[Any, Any]:
    """onnxscript's SimplePatternMatcher and MatchResult, or (None, None) where they moved."""
    try:
        from onnxscript.rewriter._basics import MatchResult
        from onnxscript.rewriter._matcher import SimplePatternMatcher
        from onnxscript.rewriter._pattern_ir import GraphPattern, NodePattern
    except ImportError:
        return None, None
    needed = (callable(getattr(SimplePatternMatcher, "match", None))
              and isinstance(getattr(GraphPattern, "has_single_output_node", None), property)
              and callable(getattr(NodePattern, "matches", None)))
    return (SimplePatternMatcher, MatchResult) if needed else (None, None)
