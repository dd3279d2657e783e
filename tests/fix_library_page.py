"""Write docs/benchmarks/fix_library.md from a run of tests/test_fix_library.py.

    FIXPORT_FIX_LIBRARY_RESULTS=docs/benchmarks/fix_library.json python -m pytest tests/test_fix_library.py
    python -m tests.fix_library_page docs/benchmarks/fix_library.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fixport.core.sweep.stamp import stamp_markdown
from fixport.symbolics.dynamo.library import dynamo_library
from fixport.symbolics.library import TemplateLibrary
from tests.fix_library_table import CASES, EXPORTERS

PAGE = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "fix_library.md"
TITLES = {"torchscript": "TorchScript", "dynamo": "dynamo"}


def _cell(outcome: dict[str, str] | None) -> str:
    if outcome is None:
        return "not run"
    text = {"works": "works", "expected failure": "fails (expected)", "not for this exporter": "—"}[outcome["outcome"]]
    return f"{text}: {outcome['detail']}" if outcome["detail"] else text


def page(results: dict[str, Any]) -> str:
    """The report: one row per hand-written fix, what it did under each exporter."""
    outcomes: dict[str, dict[str, dict[str, str]]] = results["outcomes"]
    libraries = [TemplateLibrary(user_dir="/nonexistent"), dynamo_library(user_dir="/nonexistent")]
    templates = {t.id: t for library in libraries for t in library.all()}
    both = sum(1 for case in CASES if templates[case.template_id].exporters == ("torchscript", "dynamo"))
    counts = {exporter: sum(1 for case in CASES if outcomes.get(case.template_id, {}).get(exporter, {})
                            .get("outcome") == "works") for exporter in EXPORTERS}
    lines = [
        "# The fix library under both exporters",
        "",
        stamp_markdown(results["stamp"]),
        "",
        "<!-- Written by tests/fix_library_page.py from a run of tests/test_fix_library.py: do not edit. -->",
        "",
        "Every hand-written fix, exported with its small model from `tests/fix_library_table.py` under each",
        "exporter, run in ONNX Runtime and compared with torch (the largest absolute difference is shown).",
        "A fix written once as an ONNX function (`@fix` without `torchscript_only`) is offered by both",
        "libraries; a fix only one exporter can take says why.",
        "",
        f"- {len(CASES)} hand-written fixes; {both} written once for both exporters.",
        *(f"- Work under {TITLES[e]}: {counts[e]} of {len(CASES)}." for e in EXPORTERS),
        "",
        "| template | strategy | op | TorchScript | dynamo |",
        "|---|---|---|---|---|",
    ]
    for case in sorted(CASES, key=lambda c: (templates[c.template_id].family, c.template_id)):
        found = outcomes.get(case.template_id, {})
        lines.append(f"| `{case.template_id}` | {templates[case.template_id].family} | `{case.op}` | "
                     + " | ".join(_cell(found.get(e)).replace("|", "\\|") for e in EXPORTERS) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    PAGE.write_text(page(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {PAGE}")
