"""Issue 36: a job's context (the model loaded, the options resolved, the exporter, the fixes) is
built once per job and passed down, not rebuilt by each export inside it."""
from __future__ import annotations

from fixport.core.analysis import job_context
from fixport.core.analysis.job_context import open_job
from fixport.core.fixing.auto_fix import auto_fix
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import example_path


def test_options_are_resolved_again_only_when_the_job_changes_them() -> None:
    context = open_job(ModelRequest(str(example_path("threshold"))), {"opset": 10})
    assert context.options.opset == 10 and context.exporter.profile.name == "torchscript"
    raised = context.with_overrides({"opset": 11})
    assert raised.options.opset == 11 and raised.exporter is context.exporter and raised.loaded is context.loaded
    assert context.with_overrides({"opset": 10}) is context
    assert context.with_overrides({"opset": 18, "exporter": "dynamo"}).exporter.profile.name == "dynamo"
    one, other = context.export_options(), context.export_options()
    one.custom_opsets["mylib"] = 1  # what an export does with its fixes' domains
    assert other.custom_opsets == {} and context.options.custom_opsets == {}


def test_fix_auto_opens_the_model_and_resolves_its_options_once(monkeypatch) -> None:
    """The threshold example: the export as it is, a trial on the node, the whole model with the
    fix (two whole-model exports), all from one context."""
    calls = {"open": 0, "resolve": 0}

    def counted(name: str, function):
        def call(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return call

    monkeypatch.setattr(job_context, "open_model", counted("open", job_context.open_model))
    monkeypatch.setattr(job_context, "resolved_export_options", counted("resolve", job_context.resolved_export_options))
    result = auto_fix(AutoFixRequest(ModelRequest(str(example_path("threshold")))))
    assert result.after.unsupported == [] and result.whole_model_exports == 2
    assert calls == {"open": 1, "resolve": 1}
