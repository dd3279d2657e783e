"""A transformers checkpoint folder in the window: opened by path like any model, the Checkpoint bar
showing its task and components (choosing one exports it), and Compare showing the generation check."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent

from tests.test_gui_flow import run_job

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("checkpoint") / "tiny-llama"
    transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=100, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).save_pretrained(folder)
    return folder


@pytest.mark.slow  # the DETR folder keeps the window's checkpoint bar in the fast tier
def test_a_checkpoint_folder_opens_with_its_task_and_components(qtbot, window, llama_folder: Path) -> None:
    drag = QMimeData()
    drag.setUrls([QUrl.fromLocalFile(str(llama_folder))])
    event = QDragEnterEvent(QPoint(10, 10), Qt.DropAction.CopyAction, drag, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    window.dragEnterEvent(event)
    assert event.isAccepted()  # a folder with config.json can be dropped on the window

    run_job(qtbot, window, lambda: window.open_path(llama_folder))
    analysis = window.workbench.analysis
    assert analysis is not None, window.log.contents()
    bar = window.checkpoint_bar
    assert not bar.isHidden()
    assert bar.task.currentText() == "text-generation"
    components = [bar.component.itemText(i) for i in range(bar.component.count())]
    assert components == analysis.components and len(components) == 2, components
    assert bar.component.currentText() == analysis.component == components[0]

    bar.component.setCurrentIndex(1)
    run_job(qtbot, window, lambda: bar.component.activated.emit(1))
    assert window.workbench.project.component == components[1]
    assert window.workbench.analysis.component == components[1]
    assert bar.component.currentText() == components[1]

    run_job(qtbot, window, window.actions["compare"].trigger)
    summary = window.compare.summary.text()
    assert "Generation check" in summary and "identical tokens" in summary, summary


def test_the_checkpoint_bar_stays_hidden_for_a_model_file(qtbot, window, tmp_path: Path) -> None:
    model = tmp_path / "m.py"
    model.write_text("import torch\n\ndef build():\n    return torch.nn.ReLU(), (torch.randn(2, 3),)\n")
    run_job(qtbot, window, lambda: window.open_path(model))
    assert window.workbench.analysis is not None
    assert window.checkpoint_bar.isHidden()


def test_an_input_the_config_does_not_size_is_asked_for(qtbot, window, tmp_path: Path, monkeypatch) -> None:
    """DETR's config gives no image size: the window asks for pixel_values, naming it, then exports."""
    torch.manual_seed(0)
    folder = tmp_path / "tiny-detr"
    transformers.DetrForObjectDetection(transformers.DetrConfig(
        use_timm_backbone=False, use_pretrained_backbone=False,
        backbone_config=transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1],
                                                  out_features=["stage4"]),
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=37, decoder_ffn_dim=37, num_queries=5, num_labels=3)).save_pretrained(folder)
    asked: list[str] = []
    answer = ("pixel_values=2x3x64x64", True)
    monkeypatch.setattr("fixport.gui.model_questions.QInputDialog.getText",
                        lambda _parent, _title, prompt, **kwargs: asked.append(prompt) or answer)
    run_job(qtbot, window, lambda: window.open_path(folder))  # fails: no image size; asks; exports again
    qtbot.waitUntil(lambda: window.workbench.analysis is not None, timeout=300_000)
    assert asked and "pixel_values" in asked[0] and "image_size" in asked[0], asked
    assert window.workbench.project.input_specs == ["pixel_values=2x3x64x64"]
    assert window.workbench.analysis.task == "object-detection"
    assert window.checkpoint_bar.task.currentText() == "object-detection"
