"""Every job the export worker runs, in one table: its request type, function and result type.

The table never imports torch: functions are named by dotted path ("module:function") and the
worker process resolves them with importlib. Every job function has the same shape::

    def job(request: XRequest, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None) -> Result
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fixport.core.onnx_io.op_docs import OpInfo
from fixport.core.records.baseline import BaselineResult
from fixport.core.records.compare_result import CompareResult
from fixport.core.records.exporter_comparison import ExporterComparison, ExporterRun
from fixport.core.records.fix_offers import FixOffers
from fixport.core.records.requests import (
    AnalyzeRequest,
    AutoFixRequest,
    BaselineRequest,
    CompareExportersRequest,
    CompareRequest,
    FixOffersRequest,
    OpInfoRequest,
    PingRequest,
    RunExporterRequest,
    StubRequest,
    SuggestDynamicRequest,
    SynthesizeRequest,
)
from fixport.core.records.results import AnalysisResult, AutoFixResult, WorkerInfo
from fixport.core.records.runtime_pair import RuntimesCompareRequest, RuntimesComparison


@dataclass(frozen=True)
class Job:
    """One worker job: ``function`` takes a ``request_type`` and returns a ``result_type``."""

    name: str
    request_type: type
    function: str  # "package.module:function", imported in the worker only
    result_type: type

    def resolve(self) -> Callable[..., Any]:
        """The job's function (imports its module: call this in the worker process)."""
        module_name, function_name = self.function.split(":")
        return getattr(importlib.import_module(module_name), function_name)


JOBS: tuple[Job, ...] = (
    Job("ping", PingRequest, "fixport.core.worker.server:ping", WorkerInfo),
    Job("analyze", AnalyzeRequest, "fixport.core.analysis.analysis:analyze", AnalysisResult),
    Job("baseline", BaselineRequest, "fixport.core.analysis.baseline:plain_baseline", BaselineResult),
    Job("compare", CompareRequest, "fixport.core.comparison.compare_job:compare", CompareResult),
    Job("run_exporter", RunExporterRequest, "fixport.core.exporter_comparison.exporter_run:run_exporter",
        ExporterRun),
    Job("compare_exporters", CompareExportersRequest, "fixport.core.exporter_comparison.job:compare_exporters",
        ExporterComparison),
    Job("auto_fix", AutoFixRequest, "fixport.core.fixing.auto_fix:auto_fix", AutoFixResult),
    Job("stub", StubRequest, "fixport.core.fixing.generated_fixes:stub", str),
    Job("op_info", OpInfoRequest, "fixport.core.analysis.op_info:op_info", OpInfo),
    Job("suggest_dynamic", SuggestDynamicRequest, "fixport.core.analysis.dim_suggestions:suggest_dynamic_dims", list),
    Job("synthesize", SynthesizeRequest, "fixport.core.fixing.generated_fixes:generated_offers", list),
    Job("fix_offers", FixOffersRequest, "fixport.core.fixing.fix_offers:fix_offers", FixOffers),
    Job("compare_runtimes", RuntimesCompareRequest, "fixport.core.comparison.runtime_pair:compare_runtimes",
        RuntimesComparison),
)

_JOB_BY_REQUEST_TYPE = {job.request_type: job for job in JOBS}


def job_for(request: object) -> Job:
    """The job that serves ``request`` (its type decides)."""
    return job_for_type(type(request))


def job_for_type(request_type: type) -> Job:
    """The job for a request type (also for registering result handlers)."""
    try:
        return _JOB_BY_REQUEST_TYPE[request_type]
    except KeyError:
        known = ", ".join(job.request_type.__name__ for job in JOBS)
        raise TypeError(f"{request_type.__name__} is not a worker request; use one of {known}.") from None
