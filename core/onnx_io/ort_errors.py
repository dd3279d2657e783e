"""Where an ONNX Runtime error happened: the node it names, in any of ONNX Runtime's phrasings.

ONNX Runtime names the failing node differently at each stage. Each pattern below was read off
ONNX Runtime's own messages (tests/test_ort_errors.py makes a tiny model for each one):

- no kernel at load: ``Could not find an implementation for GridSample(16) node with name 'Y'``
- a kernel failing while it runs: ``Non-zero status code returned while running Reshape node.
  Name:'Y' Status Message: ...``
- shape or type inference at load: ``Node (Y) Op (Add) [ShapeInferenceError] ...``
- the model checker: ``In Node, ("Y", Relu, "", -1) : ... Error ...``
- a type the schema refuses: ``... of operator (CumSum) in node (Y) is invalid``, or ``Type
  parameter (T) of Optype (Add) bound to different types ... in node (Y).``
- an op no kernel or function exists for: ``custom:Foo(-1) is not a registered function/op``
  (no node name: the op type)
- a dangling input: ``Node input 'x' is not a graph input, initializer, or output of a previous
  node`` (a value name: the node that reads it)
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class OrtErrorSite:
    """What an ONNX Runtime error says about where it happened; empty strings where it does not say."""

    node_name: str = ""
    op_type: str = ""
    domain: str | None = None  # None: not said
    input_name: str = ""  # a value the failing node reads

    @property
    def named(self) -> bool:
        return bool(self.node_name or self.op_type or self.input_name)


_NAME_AND_OP_PATTERNS = (
    re.compile(r"Could not find an implementation for (?P<op>[\w.\-]+)\(-?\d+\) node with name '(?P<name>[^']*)'"),
    re.compile(r"Non-zero status code returned while running (?P<op>[\w.\-]+) node\. Name:'(?P<name>[^']*)'"),
    re.compile(r"[Nn]ode \((?P<name>.*?)\) Op \((?P<op>[\w.\-]+)\)"),
    re.compile(r'In Node, \("(?P<name>[^"]*)", (?P<op>[\w.\-]+), "(?P<domain>[^"]*)"'),
    re.compile(r"of operator \((?P<op>[\w.\-]+)\) in node \((?P<name>[^)]*)\)"),
    re.compile(r"of Optype \((?P<op>[\w.\-]+)\) bound to different types .*? in node \((?P<name>[^)]*)\)"),
)
_NAME_ONLY_PATTERNS = (re.compile(r"[Nn]ode ?\((?P<name>[^)]*)\)"), re.compile(r"Name:'(?P<name>[^']*)'"))
_UNREGISTERED_OP = re.compile(r"(?P<domain>[\w.\-]+):(?P<op>[\w\-]+)\(-?\d+\) is not a registered function/op")
_DANGLING_INPUT = re.compile(r"Node input '(?P<input>[^']*)' is not a graph input")


def ort_error_site(error_text: str) -> OrtErrorSite:
    """The node (name and op type), op or input an ONNX Runtime error names; an empty site when it
    names none."""
    for pattern in _NAME_AND_OP_PATTERNS:
        match = pattern.search(error_text)
        if match:
            found = match.groupdict()
            return OrtErrorSite(found["name"], found["op"], found.get("domain"))
    match = _UNREGISTERED_OP.search(error_text)
    if match:
        return OrtErrorSite(op_type=match["op"], domain=match["domain"])
    for pattern in _NAME_ONLY_PATTERNS:
        match = pattern.search(error_text)
        if match and match["name"]:
            return OrtErrorSite(match["name"])
    match = _DANGLING_INPUT.search(error_text)
    if match:
        return OrtErrorSite(input_name=match["input"])
    return OrtErrorSite()


_STATUS_MESSAGE = re.compile(r"Status Message: (?:\S+:\d+ )?(?P<message>.*)", re.S)
_FAILED_CHECK = " was false. "  # ORT_ENFORCE's wording: what follows is the sentence meant for people


def ort_error_summary(error_text: str) -> str:
    """A failing kernel's error in a person's words: ``Reshape node '/Reshape': The input tensor
    cannot be reshaped ...``, without ORT's source path, C++ signature and failed condition; ''
    for an error that is not a running kernel's."""
    site = ort_error_site(error_text)
    match = _STATUS_MESSAGE.search(error_text)
    if not (match and site.node_name and site.op_type):
        return ""
    message = match["message"].strip()
    message = message.split(_FAILED_CHECK, 1)[1] if _FAILED_CHECK in message else message
    return f"{site.op_type} node '{site.node_name}': {(message.splitlines() or [''])[0]}".rstrip(": ")
