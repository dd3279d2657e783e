"""What a fix search's fixes cost at run time: the export without them and with them, each timed in
ONNX Runtime (the two extra exports run only when asked: the window's Fix all asks)."""
from __future__ import annotations

from fixport.core.analysis.analysis import analyze_in
from fixport.core.analysis.job_context import JobContext
from fixport.core.records.results import AutoFixResult
from fixport.core.words.cancel import CancelCallback, check_cancelled


def time_both_exports(before: JobContext, after: JobContext, latency_runs: int, result: AutoFixResult,
                      cancelled: CancelCallback | None = None) -> None:
    """Set ``result.cost_before`` (the export as the search started: the request's own options and
    fixes) and ``cost_after`` (the search's), each None where ONNX Runtime cannot run that export."""
    for field_name, context in (("cost_before", before), ("cost_after", after)):
        check_cancelled(cancelled)
        timed = analyze_in(context, context.analyze_request(run_check=False, latency_runs=latency_runs),
                           cancelled=cancelled)
        setattr(result, field_name, timed.cost)
