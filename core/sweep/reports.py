"""A sweep's rows as JSON (the window opens it), markdown (stamped) and JUnit XML (for CI)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from fixport.core.foundation.errors import FixportError
from fixport.core.project.atomic_files import atomic_write_bytes
from fixport.core.sweep.rows import SweepRow, SweepSettings, Verdict
from fixport.core.sweep.stamp import stamp_markdown
from fixport.core.words.runtimes import OPENVINO

SWEEP_FORMAT = "fixport-sweep"
SWEEP_FORMAT_VERSION = 1
JUNIT_SUITES_NAME = "fixport sweep"


def worse_first(rows: list[SweepRow]) -> list[SweepRow]:
    """The rows where Fixport does worse than plain torch.onnx.export first (Fixport defects), then
    the others, each in their order."""
    return sorted(rows, key=lambda row: not row.fixport_worse)


def sweep_json(rows: list[SweepRow], settings: SweepSettings, stamp: dict[str, Any]) -> dict[str, Any]:
    rows = worse_first(rows)
    return {"format": SWEEP_FORMAT, "version": SWEEP_FORMAT_VERSION, "stamp": stamp,
            "settings": {"exporters": list(settings.exporters), "fix": settings.fix, "opset": settings.opset,
                         "baseline": settings.baseline, "runtime": settings.runtime},
            "summary": {"rows": len(rows), "passed": sum(row.passed for row in rows),
                        "fixport_worse": sum(bool(row.fixport_worse) for row in rows)},
            "rows": [row.to_json() for row in rows]}


def write_json(path: Path, rows: list[SweepRow], settings: SweepSettings, stamp: dict[str, Any]) -> None:
    atomic_write_bytes(path, json.dumps(sweep_json(rows, settings, stamp), indent=1).encode())


def read_sweep_json(path: Path) -> list[SweepRow]:
    """The rows of a file `sweep --json` wrote; a FixportError naming what is wrong with any other file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FixportError(f"Cannot read {path} as sweep results: {exc}",
                           "Open the file `python main.py sweep ... --json FILE` wrote.") from exc
    if not isinstance(data, dict) or data.get("format") != SWEEP_FORMAT:
        raise FixportError(f"{path} is not a sweep's results (no \"format\": \"{SWEEP_FORMAT}\").",
                           "Open the file `python main.py sweep ... --json FILE` wrote.")
    if data.get("version", 0) > SWEEP_FORMAT_VERSION:
        raise FixportError(f"{path} was written by a newer Fixport (sweep format {data['version']}).",
                           "Update Fixport to open it.")
    return [SweepRow.from_json(row) for row in data.get("rows", [])]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _error_text(row: SweepRow) -> str:
    return "—" if row.max_abs is None else f"{row.max_abs:.2e}"


def markdown(rows: list[SweepRow], settings: SweepSettings, stamp: dict[str, Any]) -> str:
    rows = worse_first(rows)
    fix = ", with fix --auto" if settings.fix else ""
    opset = f", opset {settings.opset}" if settings.opset is not None else ""
    baseline = ", against plain torch.onnx.export" if settings.baseline else ""
    baseline += ", compared in OpenVINO (f32)" if settings.runtime == OPENVINO else ""
    worse = [row for row in rows if row.fixport_worse]
    lines = [f"# Sweep: {len(rows)} row(s), {sum(r.passed for r in rows)} passed",
             "", stamp_markdown(stamp), "", f"Exporters: {', '.join(settings.exporters)}{fix}{opset}{baseline}.", ""]
    if worse:
        lines += [f"**Fixport is worse than plain torch.onnx.export in {len(worse)} row(s)** (Fixport defects, "
                  "listed first):", "", *(f"- {_cell(row.name)} [{row.exporter}]: {_cell(row.fixport_worse)}"
                                          for row in worse), ""]
    lines += ["| model | exporter | status | problems | fixes chosen | verdict | largest error | plain torch | "
              "time (s) | note |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        problems = f"{len(row.problems)}: {', '.join(row.problem_kinds)}" if row.problems else "0"
        note = "; ".join(part for part in (row.first_divergent and f"first divergent {row.first_divergent}",
                                           row.message) if part)
        lines.append(f"| {_cell(row.name)} | {row.exporter} | {row.status} | {_cell(problems)} | "
                     f"{_cell('; '.join(row.fixes))} | **{row.verdict}** | {_error_text(row)} | "
                     f"{_baseline_cell(row)} | {row.total_seconds:.1f} | {_cell(note)} |")
    return "\n".join(lines) + "\n"


def _baseline_cell(row: SweepRow) -> str:
    """The plain export's verdict, flagged where Fixport does worse ('—' where not run)."""
    if row.baseline is None:
        return "—"
    return f"**{row.baseline.verdict.value}, Fixport worse**" if row.fixport_worse else row.baseline.verdict.value


def write_markdown(path: Path, rows: list[SweepRow], settings: SweepSettings, stamp: dict[str, Any]) -> None:
    atomic_write_bytes(path, markdown(rows, settings, stamp).encode())


def junit_xml(rows: list[SweepRow]) -> bytes:
    """One <testsuite> per exporter, one <testcase> per model: a failure for a fail or a model not
    compared, an error where it could not be loaded or compared; the message says why."""
    rows = worse_first(rows)
    suites = ElementTree.Element("testsuites", name=JUNIT_SUITES_NAME)
    for exporter in dict.fromkeys(row.exporter for row in rows):
        chosen = [row for row in rows if row.exporter == exporter]
        suite = ElementTree.SubElement(suites, "testsuite", name=f"{JUNIT_SUITES_NAME} ({exporter})")
        for row in chosen:
            case = ElementTree.SubElement(suite, "testcase", name=f"{row.name} [{exporter}]",
                                          classname=f"fixport.sweep.{exporter}", time=f"{row.total_seconds:.3f}")
            if row.verdict == Verdict.ERROR.value:
                ElementTree.SubElement(case, "error", message=row.message or "error", type="error").text = \
                    _junit_details(row)
            elif not row.passed:
                ElementTree.SubElement(case, "failure", message=_failure_message(row), type=row.verdict).text = \
                    _junit_details(row)
            ElementTree.SubElement(case, "system-out").text = _junit_details(row)
        _count(suite, chosen)
    _count(suites, rows)
    ElementTree.indent(suites)
    return ElementTree.tostring(suites, encoding="utf-8", xml_declaration=True)


def _failure_message(row: SweepRow) -> str:
    left = row.left or row.problems
    problems = f"{len(left)} problem(s): {', '.join(dict.fromkeys(left))}" if left else ""
    return "; ".join(part for part in (row.fixport_worse, f"verdict {row.verdict}", problems, row.first_divergent and
                                       f"first divergent {row.first_divergent}", row.message) if part)


def _junit_details(row: SweepRow) -> str:
    lines = [f"status: {row.status}", f"verdict: {row.verdict}", f"opset: {row.opset}",
             f"largest error: {_error_text(row)}"]
    lines += [f"problem: {p}" for p in row.problems] + [f"fix: {f}" for f in row.fixes]
    lines += [f"left: {p}" for p in row.left] + ([f"note: {row.message}"] if row.message else [])
    lines += [row.baseline.line()] if row.baseline else []
    lines += [row.fixport_worse] if row.fixport_worse else []
    return "\n".join(lines)


def _count(element: ElementTree.Element, rows: list[SweepRow]) -> None:
    element.set("tests", str(len(rows)))
    element.set("failures", str(sum(not r.passed and r.verdict != Verdict.ERROR.value for r in rows)))
    element.set("errors", str(sum(r.verdict == Verdict.ERROR.value for r in rows)))
    element.set("skipped", "0")
    element.set("time", f"{sum(r.total_seconds for r in rows):.3f}")


def write_junit(path: Path, rows: list[SweepRow]) -> None:
    atomic_write_bytes(path, junit_xml(rows))
