"""A copy of an ONNX model whose custom-domain nodes run on reference kernels, so a comparison runs
without the backend they were written for.

Through onnxruntime-extensions, a Python function can be an ORT kernel. onnxruntime-extensions only
dispatches Python ops in the domain ``ai.onnx.contrib``, so each node is rewritten (domain and a
unique op type) in a copy of the model, and its attributes are dropped. Which function runs a node
is the exporter's business: it passes a :data:`NodeReference` (the TorchScript exporter runs the
original torch node).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import onnx
import onnxruntime as ort

from fixport.core.onnx_io.diagnosis import ORT_NATIVE_DOMAINS
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.words.graph import Graph

CONTRIB_DOMAIN = "ai.onnx.contrib"
CONTRIB_OPSET_VERSION = 1
_unique_suffix = itertools.count()  # registrations are process-global and cannot be removed
# Freeing an ORT session that runs extensions Python ops, after other such sessions came and
# went, can segfault (onnxruntime-extensions 0.15): such sessions live as long as the process.
# Only custom-op models pay this; the worker process is restarted when it matters.
_sessions_kept_alive: list[Any] = []

# Registers a reference kernel for one node (given the key of the source node it came from) and
# rewrites the node to call it, in place; returns '' or why not.
NodeReference = Callable[[onnx.NodeProto, str], str]

@dataclass
class ReferencePlan:
    """A model whose custom-domain nodes run on torch references, and what could not be done."""

    model: OnnxModel
    referenced: list[str] = field(default_factory=list)  # ONNX node names given a reference
    missing: list[str] = field(default_factory=list)  # one sentence per node left without one
    messages: list[str] = field(default_factory=list)

    @property
    def needs_extensions(self) -> bool:
        return bool(self.referenced)

    def session_options(self) -> ort.SessionOptions | None:
        """Session options loading onnxruntime-extensions, when a reference is in the model."""
        if not self.needs_extensions:
            return None
        from onnxruntime_extensions import get_library_path

        options = ort.SessionOptions()
        options.register_custom_ops_library(get_library_path())
        return options

    def create_session(self, model: OnnxModel | None = None, provider: str = "cpu", **options: Any) -> Any:
        """A :class:`fixport.core.onnx_io.ort_session.SessionInfo` for ``model`` (default: the plan's model);
        ``options`` (precision, profile) go to :func:`fixport.core.onnx_io.ort_session.create_session`."""
        from fixport.core.onnx_io.ort_session import create_session

        info = create_session(self.model if model is None else model, provider, self.session_options(), **options)
        if self.needs_extensions:
            _sessions_kept_alive.append(info.session)
        return info


NO_REFERENCE = ("no torch reference: the node has no provenance (an ONNX file exported elsewhere) "
                "or the torch graph was not captured")


def unique_op_type(op_type: str) -> str:
    """A new op type for a rewritten node: registrations cannot be replaced."""
    return f"{op_type}_fixport_reference_{next(_unique_suffix)}"


def rewrite_to_contrib(node: onnx.NodeProto, op_type: str) -> None:
    """Point ``node`` at the Python op registered as ``op_type``; its attributes are dropped."""
    node.domain = CONTRIB_DOMAIN
    node.op_type = op_type
    del node.attribute[:]


def custom_domain_node_indices(model: onnx.ModelProto) -> list[int]:
    """Positions of nodes plain ONNX Runtime has no kernel or local function for."""
    local_functions = {(f.domain, f.name) for f in model.functions}
    return [index for index, node in enumerate(model.graph.node)
            if (node.domain or "onnx") not in ORT_NATIVE_DOMAINS and (node.domain, node.op_type) not in local_functions]


def plan_references(model: OnnxModel, onnx_graph: Graph | None, reference: NodeReference | None) -> ReferencePlan:
    """Rewrite every custom-domain node of a copy of ``model`` to a reference kernel, if possible.

    ``onnx_graph`` must list the nodes in ``model``'s order with their provenance (``origin``).
    """
    indices = custom_domain_node_indices(model.proto)
    if not indices:
        return ReferencePlan(model)
    copy = onnx.ModelProto()
    copy.CopyFrom(model.proto)
    plan = ReferencePlan(model.derived(copy))
    try:
        import onnxruntime_extensions  # noqa: F401
    except ImportError:
        plan.missing = [f"{_label(model.proto.graph.node[i])}: onnxruntime-extensions is not installed "
                        "(pip install onnxruntime-extensions)" for i in indices]
        return plan
    for index in indices:
        node = copy.graph.node[index]
        origin = onnx_graph.nodes[index].origin if onnx_graph is not None else []
        why_not = reference(node, origin[0] if origin else "") if reference is not None else NO_REFERENCE
        if why_not:
            plan.missing.append(f"{_label(node)}: {why_not}")
        else:
            plan.referenced.append(node.name or node.op_type)
    if plan.referenced:
        if not any(o.domain == CONTRIB_DOMAIN for o in copy.opset_import):
            copy.opset_import.append(onnx.helper.make_opsetid(CONTRIB_DOMAIN, CONTRIB_OPSET_VERSION))
        plan.messages.append(
            f"{len(plan.referenced)} custom-domain node(s) ran on a torch reference through "
            f"onnxruntime-extensions ({', '.join(plan.referenced[:5])}{'...' if len(plan.referenced) > 5 else ''}): "
            "they match torch by construction, the rest of the graph is what is compared.")
    return plan


def _label(node: onnx.NodeProto) -> str:
    return f"{node.domain}::{node.op_type} ({node.name or 'unnamed'})"



def register_python_op(op_type: str, kernel: Callable[..., Any], inputs: list[Any], outputs: list[Any]) -> None:
    from onnxruntime_extensions import onnx_op

    onnx_op(op_type=op_type, inputs=inputs, outputs=outputs)(kernel)
