"""Where an OpenVINO error happened: the node or op it names, as ort_errors.py does for ONNX Runtime.

OpenVINO's ONNX front end names what it cannot convert in two ways (read off OpenVINO 2026.4's own
messages, tests/test_openvino.py makes a model for each):

- an op it has no conversion for: ``No conversion rule found for operations: Det-18`` (op types
  with their opset, comma separated; no node name)
- a node whose conversion fails: ``While validating ONNX node '<Node(MeanVarianceNormalization):
  /blk/mvn>': ...``

and its CPU plugin, compiling a converted node, by OpenVINO's own op (the node keeps the ONNX
node's name): ``Node /DFT_2 of type RDFT`` followed by the reason (seen on kornia's FFT convolution).
"""
from __future__ import annotations

import re

from fixport.core.onnx_io.diagnosis import runtime_error_problem
from fixport.core.onnx_io.ort_errors import OrtErrorSite
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode

_NODE = re.compile(r"<Node\((?P<op>[\w.\-]+)\): (?P<name>[^>]*)>")
_PLUGIN_NODE = re.compile(r"^Node (?P<name>\S+) of type (?P<op>[\w.\-]+)$", re.M)
_NO_CONVERSION = re.compile(r"No conversion rule found for operations: (?P<op>[\w.]+?)-\d+")
_NO_CONVERSION_LINE = re.compile(r"No conversion rule found for operations: .*")
# lines that say where in OpenVINO's C++ a check failed, not what failed
_MACHINERY = re.compile(r"\.cpp:\d+|^FrontEnd API failed|^Summary:|^-- |Model wasn't fully converted")


def openvino_error_site(error_text: str) -> OrtErrorSite:
    """The node (name and op type) or op an OpenVINO error names; an empty site when it names none."""
    match = _NODE.search(error_text)
    if match:
        return OrtErrorSite(match["name"], match["op"])
    match = _PLUGIN_NODE.search(error_text)
    if match:  # OpenVINO's op type is not the ONNX node's: the name alone
        return OrtErrorSite(match["name"])
    match = _NO_CONVERSION.search(error_text)
    if match:
        domain, _, op = match["op"].rpartition(".")
        return OrtErrorSite(op_type=op, domain=domain or None)
    return OrtErrorSite()


def openvino_error_summary(error_text: str) -> str:
    """An OpenVINO error in a person's words: ``No conversion rule found for operations: Det-18``,
    or ``MeanVarianceNormalization node '/mvn': Parameter axis 2 out of tensor range``, without its C++
    source paths and failed checks; its first useful line otherwise."""
    node = _NODE.search(error_text) or _PLUGIN_NODE.search(error_text)
    if node:
        after = [line.strip() for line in error_text[node.end():].splitlines()[1:]]
        said = next((line for line in after if line and not _MACHINERY.search(line)), "")
        said = said[len(node["name"]):].strip() if said.startswith(node["name"]) else said
        return f"{node['op']} node '{node['name']}': {said or 'OpenVINO cannot run it'}"
    match = _NO_CONVERSION_LINE.search(error_text)
    if match:
        return match.group(0).strip()
    lines = [line.strip() for line in error_text.splitlines() if line.strip()]
    useful = [line for line in lines if not _MACHINERY.search(line)]
    return (useful or lines or ["unknown error"])[0][:400]


def openvino_error_problem(error_text: str, onnx_graph: Graph, source_graph: Graph | None,
                           mark: bool = True) -> UnsupportedNode:
    """An OpenVINO error as a problem on the node it names, and through the export's mapping on its
    torch source (:func:`~fixport.core.onnx_io.diagnosis.runtime_error_problem`)."""
    return runtime_error_problem(openvino_error_summary(error_text), onnx_graph, source_graph, mark,
                                 site=openvino_error_site(error_text), runtime="OpenVINO")
