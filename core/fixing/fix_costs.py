"""What a fix search's fixes cost at run time: the export without them and with them, each timed in
ONNX Runtime (the two extra exports run only when asked: the window's Fix all asks)."""
from __future__ import annotations

from typing import Any

from fixport.core.analysis.analysis import analyze
from fixport.core.model.cancel import CancelCallback, check_cancelled
from fixport.core.model.project import FixMapping
from fixport.core.model.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.model.results import AutoFixResult


def time_both_exports(request: AutoFixRequest, options: dict[str, Any], mappings: list[FixMapping],
                      result: AutoFixResult, cancelled: CancelCallback | None = None) -> None:
    """Set ``result.cost_before`` (the request's own options and fixes) and ``cost_after`` (the
    search's), each None where ONNX Runtime cannot run that export."""
    for field_name, export_options, export_mappings in (("cost_before", request.options, request.mappings),
                                                        ("cost_after", options, mappings)):
        check_cancelled(cancelled)
        timed = analyze(AnalyzeRequest(request.model, dict(export_options), list(export_mappings), run_check=False,
                                       latency_runs=request.latency_runs), cancelled=cancelled)
        setattr(result, field_name, timed.cost)
