"""Where an OpenVINO error happened: the node or op it names, as ort_errors.py does for ONNX Runtime.

OpenVINO's ONNX front end names what it cannot convert in two ways (read off OpenVINO 2026.4's own
messages, tests/test_openvino.py makes a model for each):

- an op it has no conversion for: ``No conversion rule found for operations: Det-18`` (op types
  with their opset, comma separated; no node name)
- a node whose conversion fails: ``While validating ONNX node '<Node(MeanVarianceNormalization):
  /blk/mvn>': ...``
"""
from __future__ import annotations

import re

from fixport.core.model.graph import Graph
from fixport.core.model.problems import UnsupportedNode
from fixport.core.onnx_io.diagnosis import runtime_error_problem
from fixport.core.onnx_io.ort_errors import OrtErrorSite

_NODE = re.compile(r"<Node\((?P<op>[\w.\-]+)\): (?P<name>[^>]*)>")
_NO_CONVERSION = re.compile(r"No conversion rule found for operations: (?P<op>[\w.]+?)-\d+")
_SUMMARY_LINES = (re.compile(r"No conversion rule found for operations: .*"),
                  re.compile(r"While validating ONNX node .*"),
                  re.compile(r"-- \S+ with a message: .*"))
_SOURCE_PREFIX = re.compile(r"^(Exception from |Check '.*' failed at )?\S+\.cpp:\d+:?\s*")


def openvino_error_site(error_text: str) -> OrtErrorSite:
    """The node (name and op type) or op an OpenVINO error names; an empty site when it names none."""
    match = _NODE.search(error_text)
    if match:
        return OrtErrorSite(match["name"], match["op"])
    match = _NO_CONVERSION.search(error_text)
    if match:
        domain, _, op = match["op"].rpartition(".")
        return OrtErrorSite(op_type=op, domain=domain or None)
    return OrtErrorSite()


def openvino_error_summary(error_text: str) -> str:
    """The line of an OpenVINO error meant for people (not its C++ source paths); its first line otherwise."""
    for pattern in _SUMMARY_LINES:
        match = pattern.search(error_text)
        if match:
            return match.group(0).strip().rstrip(":")
    lines = [line.strip() for line in error_text.splitlines() if line.strip()]
    useful = [line for line in lines if not _SOURCE_PREFIX.match(line)]
    return (useful or lines or ["unknown error"])[0][:400]


def openvino_error_problem(error_text: str, onnx_graph: Graph, source_graph: Graph | None,
                           mark: bool = True) -> UnsupportedNode:
    """An OpenVINO error as a problem on the node it names, and through the export's mapping on its
    torch source (:func:`~fixport.core.onnx_io.diagnosis.runtime_error_problem`)."""
    return runtime_error_problem(openvino_error_summary(error_text), onnx_graph, source_graph, mark,
                                 site=openvino_error_site(error_text), runtime="OpenVINO")
