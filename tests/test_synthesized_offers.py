"""The window offers generated fixes first: the worker synthesizes them for the selected problem."""
from __future__ import annotations

from fixport.gui.main_window import MainWindow
from tests.test_gui_flow import JOB_TIMEOUT_MS, click_problem, run_job


def test_a_generated_fix_is_offered_first_and_fixes_the_node(qtbot, window: MainWindow, model_file) -> None:
    path = model_file("cosh_model.py", """
        import torch

        class Cosh(torch.nn.Module):
            def forward(self, x):
                return torch.cosh(x) + 1

        def build():
            return Cosh().eval(), (torch.randn(2, 3),)
    """)
    run_job(qtbot, window, lambda: window.open_path(path))
    assert [p.kind for p in window.workbench.analysis.unsupported] == ["aten::cosh"]
    click_problem(qtbot, window, 0)
    qtbot.waitUntil(lambda: window.template.offer_ids()[0].startswith("synthesized."), timeout=JOB_TIMEOUT_MS)
    assert window.template.offer_ids()[0] == "synthesized.standard_op.cosh"
    assert 'g.op("Cosh"' in window.template.editor.source()  # selected, and its source is there to edit
    run_job(qtbot, window, window.template.apply_kind_button.click)
    assert window.workbench.analysis.unsupported == []
    assert window.workbench.project.mappings[0].template_id == "synthesized.standard_op.cosh"


def test_a_torch_library_op_is_offered_its_python_code_inlined(qtbot, window: MainWindow) -> None:
    """The Template dock offers a torch.library op's own Python implementation, inlined, first."""
    from fixport.examples.catalog import example_path

    run_job(qtbot, window, lambda: window.open_path(example_path("library_custom_op")))
    assert [p.kind for p in window.workbench.analysis.unsupported] == ["mylib::softclip"]
    click_problem(qtbot, window, 0)
    qtbot.waitUntil(lambda: window.template.offer_ids()[0].startswith("synthesized."), timeout=JOB_TIMEOUT_MS)
    assert window.template.offer_ids()[0] == "synthesized.inlined.mylib_softclip"
    assert "emit_decomposition" in window.template.editor.source()
    run_job(qtbot, window, window.template.apply_kind_button.click)
    assert window.workbench.analysis.unsupported == []


def test_a_fix_built_for_the_traced_sizes_comes_after_the_ones_made_for_the_op(qtbot, window: MainWindow) -> None:
    from tests.test_gui_flow import open_example

    open_example(qtbot, window, "threshold")
    click_problem(qtbot, window, 0)
    qtbot.waitUntil(lambda: "synthesized.decomposition.threshold" in window.template.offer_ids(),
                    timeout=JOB_TIMEOUT_MS)
    ids = window.template.offer_ids()
    assert ids[0] == "decompose.threshold_where", ids  # made for the op, any shape
    assert ids.index("decompose.threshold_where") < ids.index("synthesized.decomposition.threshold")
