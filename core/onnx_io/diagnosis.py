"""Diagnosis: every unsupported node of one export, each with a reason."""
from __future__ import annotations

import onnx

from fixport.core.onnx_io.kernel_types import ORT_TYPE_NAMES, STANDARD_DOMAINS, KernelGap, kernel_gaps
from fixport.core.onnx_io.ort_errors import OrtErrorSite, ort_error_site
from fixport.core.words.graph import Graph, Node
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import (
    UNPLACED_KIND,
    ProblemReason,
)

# ONNX domains that ONNX Runtime implements out of the box.
ORT_NATIVE_DOMAINS = frozenset({"", "onnx", "ai.onnx", "ai.onnx.ml", "com.microsoft", "com.microsoft.nchwc",
                                "ai.onnx.training", "ai.onnx.preview.training", "com.ms.internal.nhwc"})


def _origin_node(node: Node, source_graph: Graph | None) -> Node | None:
    if source_graph is None or not node.origin:
        return None
    return source_graph.node_by_id.get(node.origin[0])


def _runtime_problem(node: Node, source_graph: Graph | None, message: str) -> UnsupportedNode:
    origin = _origin_node(node, source_graph)
    return UnsupportedNode(
        kind=origin.kind if origin else node.kind,
        instance=origin.id if origin else node.id,
        reason=ProblemReason.RUNTIME_ERROR,
        message=f"ONNX node {node.name or node.id} ({node.kind}): {message}",
        scope=origin.scope if origin else node.scope,
        source=origin.source if origin else "",
        onnx_node=node.id)


def nodes_without_runtime_kernel(onnx_graph: Graph, local_functions: set[tuple[str, str]],
                                 source_graph: Graph | None) -> list[UnsupportedNode]:
    """Nodes in a custom domain that ONNX Runtime has no kernel or function body for."""
    problems = []
    for node in onnx_graph.nodes:
        if node.unsupported or node.domain in ORT_NATIVE_DOMAINS:
            continue
        if (node.domain, node.op_type) in local_functions:
            continue
        node.unsupported = True
        problems.append(_runtime_problem(
            node, source_graph,
            f"ONNX Runtime has no kernel for domain '{node.domain}' op '{node.op_type}'. "
            "A backend plugin may implement it; to run here, map the node to standard ONNX ops."))
    return problems


def nodes_without_kernel_for_their_types(onnx_graph: Graph, model: onnx.ModelProto,
                                         source_graph: Graph | None) -> list[UnsupportedNode]:
    """Nodes ONNX Runtime's CPU provider has no kernel for at the types they are given
    (:func:`~fixport.core.onnx_io.kernel_types.kernel_gaps`), for a model ONNX Runtime did not run:
    listed with the rest of the diagnosis rather than one fixed export later, one at a time."""
    problems = []
    for gap in kernel_gaps(onnx_graph, model):
        gap.node.unsupported = True
        problem = _runtime_problem(gap.node, source_graph, gap.message())
        problem.kernel_gap = gap.given if _promoted_past_torch(gap, source_graph) else ""
        problems.append(problem)
    return problems


def runtime_error_problem(error_text: str, onnx_graph: Graph, source_graph: Graph | None,
                          mark: bool = True, model: onnx.ModelProto | None = None,
                          site: OrtErrorSite | None = None, runtime: str = "ONNX Runtime") -> UnsupportedNode:
    """Place an ONNX Runtime error on the ONNX node it names (:func:`ort_error_site`, every phrasing)
    and, through the export's mapping, on that node's origin; ``mark`` flags that node as one that
    cannot run (not for a node that runs at the traced shapes). With ``model``, a node ONNX Runtime
    has no kernel for at its types says why in the kernel table's words, and which types
    (``kernel_gap``) where the exporter promoted them past torch's: a cast back can fix it. Another
    runtime's error (OpenVINO's) comes with its ``site`` already read and the ``runtime``'s name."""
    gaps = {gap.node.id: gap for gap in kernel_gaps(onnx_graph, model)} if model is not None else {}
    node = _node_named_in(ort_error_site(error_text) if site is None else site, onnx_graph, gaps)
    short = error_text.strip().splitlines()[0] if error_text.strip() else "unknown error"
    if node is None:
        return UnsupportedNode(kind=UNPLACED_KIND, instance="", reason=ProblemReason.RUNTIME_ERROR,
                               message=f"{runtime} failed: {short}", scope="", source="")
    gap = gaps.get(node.id)
    node.unsupported = node.unsupported or mark
    problem = _runtime_problem(node, source_graph, f"{gap.lacking()}. {short}" if gap else short)
    problem.kernel_gap = gap.given if gap and _promoted_past_torch(gap, source_graph) else ""
    return problem


def _promoted_past_torch(gap: KernelGap, source_graph: Graph | None) -> bool:
    """Whether the node is given a type no tensor input of its torch op had: the exporter's own type
    promotion (a float32 grid made float64), which a cast back to torch's dtypes undoes. A bool
    CumSum that torch also sums as bool is not; where torch's types are unknown, a cast is worth a try."""
    origin = _origin_node(gap.node, source_graph)
    if origin is None or source_graph is None:
        return True
    torch_types = {ORT_TYPE_NAMES.get(source_graph.value(name).dtype or "") for name in origin.inputs} - {None}
    return not torch_types or bool(gap.refused_types - torch_types)


def _same_domain(said: str | None, domain: str) -> bool:
    if said is None:
        return True
    return said == domain or (said in STANDARD_DOMAINS and domain in STANDARD_DOMAINS)


def _node_named_in(site: OrtErrorSite, onnx_graph: Graph, gaps: dict[str, KernelGap]) -> Node | None:
    """The node ``site`` names: by name; else (a node without a name, an op or input named) the first
    node of that op type, or reading that input, preferring one ONNX Runtime has no kernel for. A
    name the graph lacks (a node inside a function or a subgraph) is not guessed by its op type."""
    if site.node_name:
        return next((node for node in onnx_graph.nodes if node.name == site.node_name), None)
    if site.input_name:
        candidates = [node for node in onnx_graph.nodes if site.input_name in node.inputs]
    elif site.op_type:
        candidates = [node for node in onnx_graph.nodes
                      if node.op_type == site.op_type and _same_domain(site.domain, node.domain)]
    else:
        return None
    return next((node for node in candidates if node.id in gaps), candidates[0] if candidates else None)
