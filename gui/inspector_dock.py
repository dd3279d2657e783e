"""The Inspector dock: everything known about the selected node."""
from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtWidgets import QDockWidget, QTextBrowser, QWidget

from fixport.core.exporters.profiles import ExporterProfile, profile_for, profile_for_graph
from fixport.core.exporters.trace_warnings import BakedHere
from fixport.core.onnx_io.op_docs import OpInfo, onnx_schema_text
from fixport.core.words.graph import Graph, Node
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import DEFAULT_OPSET, describe_reason

MAX_ATTRIBUTE_TEXT = 200
CHANGED_COPY_LINK = "fixport:changed-copy"
STYLE = """
<style>
 body { font-size: 10pt; }
 h3 { margin: 2px 0 6px 0; }
 .problem { background: #ffebee; border-left: 4px solid #c62828; padding: 4px; }
 .muted { color: #666; }
 td { padding: 1px 8px 1px 0; vertical-align: top; }
 pre { background: #f5f5f5; padding: 4px; }
</style>
"""


def _row(label: str, value: Any) -> str:
    return f"<tr><td class='muted'>{html.escape(label)}</td><td>{html.escape(str(value))}</td></tr>"


def _values_table(graph: Graph, names: list[str]) -> str:
    rows = "".join(_row(name or "(none)", graph.value(name).describe()) for name in names)
    return f"<table>{rows}</table>" if rows else "<span class='muted'>none</span>"


class InspectorDock(QDockWidget):
    changed_copy_requested = Signal()  # the user asked for a copy of the model file with the proposed changes

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Inspector", parent)
        self.setObjectName("InspectorDock")
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(False)
        self.browser.setOpenLinks(False)
        self.browser.anchorClicked.connect(self._on_link)
        self.setWidget(self.browser)
        self.clear()

    def _on_link(self, url: QUrl) -> None:
        if url.toString() == CHANGED_COPY_LINK:
            self.changed_copy_requested.emit()

    def clear(self) -> None:
        self.browser.setHtml(STYLE + "<p class='muted'>Select a node in either graph.</p>")

    def show_problem(self, problem: UnsupportedNode) -> None:
        """A problem with no node to show (a capture failure, the export's own failure)."""
        where = f" at {html.escape(problem.source)}" if problem.source else ""
        self.browser.setHtml(STYLE + f"<h3>{html.escape(problem.display_kind)}{where}</h3>"
                             + self._problem_html(problem, DEFAULT_OPSET))

    def show_node(self, graph: Graph, node: Node, problem: UnsupportedNode | None = None,
                  op_info: OpInfo | None = None, target_ops: list[str] | None = None,
                  opset: int = DEFAULT_OPSET, baked: BakedHere | None = None,
                  exporter: ExporterProfile | None = None) -> None:
        """``node`` of ``graph``, in the words of ``exporter`` (whose export the graphs are; the default's
        when not given)."""
        words = (exporter or profile_for(None)).source_graph
        parts = [STYLE, f"<h3>{html.escape(node.name or node.kind)}</h3>"]
        if problem is not None:
            parts.append(self._problem_html(problem, opset))
        if baked is not None and baked.warnings:
            parts.append(self._baked_html(baked))
        shown = profile_for_graph(graph.kind)  # None: the ONNX graph
        rows = [_row("kind", node.kind), _row("graph", shown.source_graph.pane_title if shown else "ONNX")]
        if node.scope:
            rows.append(_row("scope", node.scope))
        if node.source:
            rows.append(_row("source", node.source))
        if shown is not None and shown.source_graph.node_id:
            rows.append(_row(shown.source_graph.node_id, node.id))
        elif node.origin:
            rows.append(_row(f"from {words.nodes}", ", ".join(node.origin)))
        parts.append(f"<table>{''.join(rows)}</table>")
        parts.append("<h4>Inputs</h4>" + _values_table(graph, node.inputs))
        parts.append("<h4>Outputs</h4>" + _values_table(graph, node.outputs))
        if node.attributes:
            attrs = "".join(_row(k, self._short(v)) for k, v in node.attributes.items())
            parts.append(f"<h4>Attributes</h4><table>{attrs}</table>")
        if op_info is not None:
            parts.append(self._op_info_html(op_info, words.builtin_conversion))
        elif graph.kind == "onnx":
            schema = onnx_schema_text(node.op_type, opset, "" if node.domain == "onnx" else node.domain)
            if schema:
                parts.append(f"<h4>ONNX schema</h4><pre>{html.escape(schema)}</pre>")
        for op_type in target_ops or []:
            schema = onnx_schema_text(op_type, opset)
            if schema:
                parts.append(f"<h4>Template target: {html.escape(op_type)}</h4><pre>{html.escape(schema)}</pre>")
        self.browser.setHtml("".join(parts))

    @staticmethod
    def _problem_html(problem: UnsupportedNode, opset: int) -> str:
        """The problem's reason and message, and the code change proposed for it, if any."""
        first = (f"<br>torch has a built-in symbolic from opset {problem.first_supported_opset}"
                 if problem.first_supported_opset and problem.first_supported_opset > opset else "")
        found = (f"<div class='problem'><b>Unsupported — {html.escape(describe_reason(problem.reason))}</b><br>"
                 f"{html.escape(problem.message)}{first}</div>")
        if problem.code_change:
            found += (f"<h4>Proposed change</h4><pre>{html.escape(problem.code_change)}</pre>"
                      f"<p><a href='{CHANGED_COPY_LINK}'>Write a copy of the model file with the proposed "
                      "changes and open it</a> (the file itself is not changed)</p>")
        return found

    @staticmethod
    def _baked_html(baked: BakedHere) -> str:
        """The TracerWarnings whose recorded constant this node takes, and its constant inputs."""
        items = "".join(f"<li>{html.escape(w.text)}</li>" for w in baked.warnings)
        constants = ", ".join(html.escape(InspectorDock._short(v)) for v in baked.constants)
        taken = f"<br>Its constant inputs, as traced: {constants}." if constants else ""
        return (f"<div class='problem'><b>Traced as a constant</b> — the trace recorded a Python value here, and "
                f"the ONNX model keeps it at every input size:<ul>{items}</ul>{taken}</div>")

    @staticmethod
    def _short(value: Any) -> str:
        text = str(value)
        return text if len(text) <= MAX_ATTRIBUTE_TEXT else text[:MAX_ATTRIBUTE_TEXT] + "…"

    @staticmethod
    def _op_info_html(info: OpInfo, builtin_conversion: str) -> str:
        """The kind's ATen schemas and, where the exporter's worker says (``builtin_conversion`` is
        what torch converts it with, '' otherwise), the opsets torch converts it at."""
        schemas = "".join(f"<pre>{html.escape(s)}</pre>" for s in info.schemas[:4]) or \
            "<span class='muted'>no ATen schema (a Python op or an op torch does not know)</span>"
        if not builtin_conversion:
            return f"<h4>Schema</h4>{schemas}"
        opsets = (", ".join(map(str, info.builtin_opsets)) if info.builtin_opsets
                  else f"none — torch has no {builtin_conversion} for this kind")
        heading = f"{builtin_conversion[0].upper()}{builtin_conversion[1:]} at opsets"
        return f"<h4>Schema</h4>{schemas}<h4>{html.escape(heading)}</h4><p>{html.escape(opsets)}</p>"
