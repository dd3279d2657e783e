"""docs/writing-a-fix.md is real: its stub is the one Fixport writes, and its template fixes its model."""
from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest

from fixport.core.project.project import FixMapping
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.symbolics.dynamo.library import dynamo_library
from fixport.symbolics.library import TemplateLibrary, parse_template_source
from fixport.symbolics.stubs import generate_stub

PAGE = Path(__file__).resolve().parent.parent / "docs" / "writing-a-fix.md"
TRACED_TYPES = ["float32[4,8]", "float32[4,8]"]  # what the window passes for the page's model


def example(name: str) -> str:
    """The code block the page marks with ``<!-- example: NAME -->``."""
    found = re.search(rf"<!-- example: {re.escape(name)} -->\n```python\n(.*?)\n```", PAGE.read_text("utf-8"), re.S)
    assert found, f"docs/writing-a-fix.md has no code block marked 'example: {name}'"
    return found.group(1) + "\n"


def test_the_stub_on_the_page_is_the_one_fixport_writes() -> None:
    (overload,) = parse_template_source(example("user.aten_hypot.py")).fits
    kind = overload.partition(".")[0]  # the TorchScript node's kind, which the stub is written for
    assert example("stub") == generate_stub(kind, opset=17, input_types=TRACED_TYPES)


def test_the_template_on_the_page_fixes_the_model_on_the_page(worker, tmp_path: Path) -> None:
    model_path = tmp_path / "hypot_model.py"
    model_path.write_text(example("hypot_model.py"), encoding="utf-8")
    before = worker.run(AnalyzeRequest(ModelRequest(str(model_path))))
    assert [(p.kind, p.reason) for p in before.unsupported] == [("aten::hypot", "no_symbolic")]
    assert before.unsupported[0].source.endswith("hypot_model.py:13")  # the line the page's check output shows

    library = TemplateLibrary(user_dir=tmp_path / "templates")  # as ~/.config/fixport/templates
    template = library.save_user_template(example("user.aten_hypot.py"))
    assert library.templates_for("aten::hypot", 17)[0].template_id == template.id

    onnx_path = tmp_path / "hypot.onnx"
    mapping = FixMapping("aten::hypot", template.id, template.source, template.default_params())
    after = worker.run(AnalyzeRequest(ModelRequest(str(model_path)), mappings=[mapping], output=str(onnx_path)))
    assert after.unsupported == [], [p.message for p in after.unsupported]
    assert {"Mul", "Add", "Sqrt"} <= {node.op_type for node in onnx.load(str(onnx_path)).graph.node}

    assert after.output_max_abs is not None and after.output_max_abs < 1e-5  # ONNX Runtime against torch


@pytest.mark.slow
def test_the_template_on_the_page_fixes_the_model_under_dynamo_too(worker, tmp_path: Path) -> None:
    """The page's fix is an ONNX function under @fix: the dynamo library offers it for the op
    overload, and the dynamo exporter registers the same function (over torch_lib's own)."""
    model_path = tmp_path / "hypot_model.py"
    model_path.write_text(example("hypot_model.py"), encoding="utf-8")
    library = dynamo_library(user_dir=tmp_path / "dynamo_templates")
    template = library.save_user_template(example("user.aten_hypot.py"))
    assert library.templates_for("aten::hypot.default", 18)[0].template_id == template.id

    mapping = FixMapping("aten::hypot.default", template.id, template.source, template.default_params())
    after = worker.run(AnalyzeRequest(ModelRequest(str(model_path)), {"exporter": "dynamo"}, [mapping]))
    assert after.unsupported == [], [p.message for p in after.unsupported]
    assert after.output_max_abs is not None and after.output_max_abs < 1e-5
