"""Open a transformers checkpoint folder by path (issue 35): the task from its config, inputs and
components from transformers' exporter, transformers' ExportedModel layout on export, and the
generation check of a decoder. The checkpoints are tiny random ones the tests write themselves."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixport.core.foundation.errors import FixportError, ModelLoadError
from fixport.core.project.model_files import existing_model_path
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _bert_config():
    return transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=37, max_position_embeddings=64)


def _vit_config():
    return transformers.ViTConfig(image_size=32, patch_size=8, num_hidden_layers=2, hidden_size=32,
                                  num_attention_heads=2, intermediate_size=37, num_labels=3)


def _llama_config():
    return transformers.LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                    bos_token_id=1, eos_token_id=2, pad_token_id=0)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """save_pretrained folders: BERT as one .bin file, ViT sharded safetensors, Llama as transformers saves it."""
    root = tmp_path_factory.mktemp("checkpoints")
    torch.manual_seed(0)
    bert = transformers.BertForMaskedLM(_bert_config()).eval()
    bert.config.architectures = ["BertForMaskedLM"]  # what save_pretrained records
    bert.config.save_pretrained(root / "bert")
    torch.save(bert.state_dict(), root / "bert" / "pytorch_model.bin")
    transformers.ViTForImageClassification(_vit_config()).save_pretrained(root / "vit", max_shard_size="40KB")
    transformers.LlamaForCausalLM(_llama_config()).save_pretrained(root / "llama")
    transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=100, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, decoder_start_token_id=0,
        pad_token_id=0, eos_token_id=1)).save_pretrained(root / "t5")
    transformers.WhisperForConditionalGeneration(transformers.WhisperConfig(
        vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=37, decoder_ffn_dim=37, num_mel_bins=8, max_source_positions=16,
        max_target_positions=32, decoder_start_token_id=1, pad_token_id=0, eos_token_id=2,
        bos_token_id=1)).save_pretrained(root / "whisper")
    return {name: root / name for name in ("bert", "vit", "llama", "t5", "whisper")}


def test_a_folder_is_a_checkpoint_by_its_config_and_a_hub_id_is_refused_offline(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="without config.json") as refused:
        existing_model_path(tmp_path / "empty")
    assert "save_pretrained" in refused.value.hint
    with pytest.raises(ModelLoadError, match="offline only") as remote:
        existing_model_path("Qwen/Qwen2-0.5B")
    assert "hf download Qwen/Qwen2-0.5B" in remote.value.hint
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    assert existing_model_path(tmp_path / "ckpt") == (tmp_path / "ckpt").resolve()


def test_the_task_comes_from_the_architectures_through_transformers_auto_mappings() -> None:
    from fixport.core.foundation.checkpoints.tasks import task_of

    cases = {"BertForMaskedLM": (_bert_config, "fill-mask"), "BertForSequenceClassification":
             (_bert_config, "text-classification"), "BertModel": (_bert_config, "feature-extraction"),
             "ViTForImageClassification": (_vit_config, "image-classification"),
             "ViTModel": (_vit_config, "image-feature-extraction"),
             "LlamaForCausalLM": (_llama_config, "text-generation"),
             "T5ForConditionalGeneration": (transformers.T5Config, "text2text-generation"),
             "WhisperForConditionalGeneration": (transformers.WhisperConfig, "automatic-speech-recognition")}
    for architecture, (make_config, task) in cases.items():
        config = make_config()
        config.architectures = [architecture]
        assert task_of(config) == task, architecture


def test_a_bert_folder_of_bin_weights_checks_clean_at_other_batch_and_length(worker, checkpoints) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["bert"]))))
    assert result.unsupported == [], [p.message for p in result.unsupported]
    assert (result.task, result.components) == ("fill-mask", ["model"])
    assert result.input_names == ["input_ids", "attention_mask"]
    assert result.other_sizes_checked and "seq=" in result.other_sizes_checked[0]
    assert "batch=" in result.other_sizes_checked[0]


def test_a_task_or_component_the_folder_lacks_is_named_with_the_choices(worker, checkpoints) -> None:
    with pytest.raises(FixportError, match="no component 'decode'") as missing:
        worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["bert"]), component="decode")))
    assert "--component (model)" in missing.value.hint
    with pytest.raises(FixportError, match="no model for the task image-classification") as wrong:
        worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["bert"]), task="image-classification")))
    assert "--task" in wrong.value.hint


@pytest.mark.slow
def test_a_sharded_vit_exports_to_transformers_layout_that_runs_at_another_batch(worker, checkpoints,
                                                                               tmp_path: Path) -> None:
    from transformers.exporters import ExportedModel

    out = tmp_path / "exported"
    result = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["vit"])), output=str(out)))
    assert result.unsupported == [] and result.task == "image-classification"
    assert {p.name for p in out.iterdir()} >= {"model.onnx", "model.onnx.data", "export.json", "config.json"}
    assert json.loads((out / "export.json").read_text())["components"]["model"]["file"] == "model.onnx"
    exported = ExportedModel.from_pretrained(out)
    model = transformers.ViTForImageClassification.from_pretrained(checkpoints["vit"]).eval()
    pixels = torch.randn(3, 3, 32, 32)  # the example's batch is 2
    with torch.no_grad():
        expected = model(pixel_values=pixels).logits
    assert torch.allclose(exported(pixel_values=pixels).logits, expected, atol=1e-4)


def test_a_llama_folder_generates_torchs_tokens_through_its_exported_components(worker, checkpoints,
                                                                                tmp_path: Path) -> None:
    from transformers.exporters import ExportedModel
    from transformers.exporters.utils import decompose_for_generation

    out = tmp_path / "exported"
    said: list[str] = []
    for component in ("prefill", "decode"):
        result = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component=component),
                                           output=str(out), generation_check=component == "prefill"),
                            progress=lambda _fraction, message: said.append(message))
        assert result.unsupported == [], [p.message for p in result.unsupported]
        assert result.components == ["prefill", "decode"]
        if component == "prefill":
            check = result.generation
    assert check.passed and check.tokens == 8
    assert {run.batch for run in check.runs} == {1, 3}
    # every stage of the generation check says so (at real size it takes minutes, and the worker stops a
    # job that goes silent): the other component's export, torch's runs, each ONNX Runtime step
    generating = [m.removeprefix("checking greedy generation: ") for m in said
                  if m.startswith("checking greedy generation: ")]
    assert "loading the decode component" in generating
    assert any(m.startswith("exporting the decode component: ") for m in generating)
    assert "torch's greedy decoding, prompt 2 of 2" in generating
    assert "ONNX Runtime's prefill, prompt 1 of 2" in generating
    assert "ONNX Runtime's decode, prompt 2 of 2, step 7 of 7" in generating
    assert any(m.startswith("checking other sizes: ") for m in said)
    pasts = {past for run in check.runs for past in run.past_lengths}
    assert pasts == set(range(4, 11)) | set(range(9, 16))  # 7 decode steps after each prompt
    assert all(len(run.max_logit_difference) == 8 and max(run.max_logit_difference) < 1e-4 for run in check.runs)
    # transformers' own runners read the directory, at a batch and prompt the export never saw
    exported = ExportedModel.from_pretrained(out)
    model = transformers.LlamaForCausalLM.from_pretrained(checkpoints["llama"]).eval()
    ids = torch.randint(1, 100, (3, 5))
    mask = torch.ones_like(ids)
    mask[0, :1] = 0
    stages = decompose_for_generation(model, {"input_ids": ids, "attention_mask": mask})
    for name, (module, kwargs) in stages.items():
        import copy

        with torch.no_grad():
            expected = module(**copy.deepcopy(kwargs)).logits
        assert torch.allclose(exported.runners[name](**copy.deepcopy(kwargs)).logits, expected, atol=1e-4), name


@pytest.mark.slow
def test_the_second_components_export_checks_generation_with_the_first_as_written(worker, checkpoints,
                                                                                 tmp_path: Path) -> None:
    """Exported one component at a time into one directory, the last export's generation check decodes
    through the file the first one wrote (the pair the user deploys), not through a fresh export; a
    directory holding another model's export is not read."""
    out = tmp_path / "exported"
    first = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component="decode"),
                                      output=str(out), generation_check=False))
    assert first.unsupported == [] and (out / "decode.onnx").is_file()
    second = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component="prefill"),
                                       output=str(out), generation_check=True))
    assert second.unsupported == [], [p.message for p in second.unsupported]
    assert second.generation.passed and second.generation.written == str(out / "decode.onnx")
    assert f"this export and {out / 'decode.onnx'} as written" in second.generation.lines()[0]
    assert {run.batch for run in second.generation.runs} == {1, 3}

    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 5}))  # another model's export
    again = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component="prefill"),
                                      generation_check=True, output=str(tmp_path / "elsewhere")))
    assert again.generation.passed and again.generation.written == ""
    other = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component="prefill"),
                                      generation_check=True, output=str(out)))
    assert other.generation.passed and other.generation.written == ""


@pytest.mark.slow
def test_export_of_every_component_checks_generation_through_the_written_pair(cli, checkpoints,
                                                                             tmp_path: Path) -> None:
    out = tmp_path / "exported"
    done = cli("export", str(checkpoints["llama"]), "-o", str(out), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    components = json.loads(done.stdout)["components"]
    assert "generation" not in components["prefill"]
    generation = components["decode"]["generation"]
    assert generation["passed"] and generation["written_component"] == str(out / "prefill.onnx")
    said = cli("export", str(checkpoints["llama"]), "-o", str(out))
    assert said.returncode == 0 and f"this export and {out / 'prefill.onnx'} as written" in said.stdout


@pytest.mark.slow
def test_the_generation_check_runs_with_the_dynamo_exporter_too(worker, checkpoints) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component="decode"),
                                       {"exporter": "dynamo"}))
    assert result.unsupported == [], [p.message for p in result.unsupported]
    assert result.generation.exporter == "dynamo" and result.generation.passed
    assert "same tokens as torch" in result.generation.lines()[0]


@pytest.mark.slow
def test_a_left_padded_prefill_exports_with_dynamo_and_matches_torch_at_its_padded_rows(cli, checkpoints,
                                                                                        tmp_path: Path) -> None:
    """The padded prompt positions attend to no key: torch's attention gives them zeros, torch_lib's
    boolean-mask attention the mean of the values, unless transformers' ONNX patches are installed."""
    import copy

    from transformers.exporters import ExportedModel
    from transformers.exporters.utils import decompose_for_generation

    out = tmp_path / "exported"
    done = cli("export", str(checkpoints["llama"]), "--exporter", "dynamo", "--component", "prefill", "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "prefill.onnx").is_file()
    model = transformers.LlamaForCausalLM.from_pretrained(checkpoints["llama"]).eval()
    ids = torch.randint(1, 100, (3, 6))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0  # rows 0-2 of the first prompt see no real token
    prefill, kwargs = decompose_for_generation(model, {"input_ids": ids, "attention_mask": mask})["prefill"]
    with torch.no_grad():
        expected = prefill(**copy.deepcopy(kwargs)).logits
    got = ExportedModel.from_pretrained(out).runners["prefill"](**copy.deepcopy(kwargs)).logits
    assert torch.allclose(got, expected, atol=1e-4), (got - expected).abs().amax(dim=(1, 2))


@pytest.mark.slow
def test_check_on_a_folder_lists_its_components_and_checks_each(cli, checkpoints) -> None:
    done = cli("check", str(checkpoints["llama"]), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["task"] == "text-generation" and list(report["components"]) == ["prefill", "decode"]
    # the second component decodes through the first one's export, kept on disk for it: each exported once
    assert "generation" not in report["components"]["prefill"]
    generation = report["components"]["decode"]["generation"]
    assert generation["passed"] is True and generation["written_component"] == ""
    assert all(not each["unsupported"] for each in report["components"].values())
    refused = cli("check", "some-org/some-model")
    assert refused.returncode == 2 and "offline only" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.slow
def test_check_keeps_a_components_export_only_for_a_later_ones_generation_check(worker, checkpoints,
                                                                               tmp_path: Path) -> None:
    """The first component's export waits on disk for the second's generation check; the second,
    having run it, is no later one's other half and is not written (at real size, seconds of writing
    a copy of the weights nobody reads)."""
    kept = tmp_path / "kept"
    kept.mkdir()
    first = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component="prefill"),
                                      generation_check=False, kept_in=str(kept)))  # as check asks it
    assert first.generation is None and (kept / "prefill.onnx").is_file()
    second = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints["llama"]), component="decode"),
                                       generation_check=True, kept_in=str(kept)))
    assert second.generation is not None and second.generation.passed
    assert not (kept / "decode.onnx").exists()


@pytest.mark.slow
def test_compare_on_a_decoder_folder_also_generates(worker, checkpoints) -> None:
    from fixport.core.records.requests import CompareRequest

    result = worker.run(CompareRequest(ModelRequest(str(checkpoints["llama"]), component="decode"),
                                       analyze_nodes=False))
    assert result.passed and result.generation is not None and result.generation.passed
    assert result.to_json()["generation"]["runs"][1]["past_lengths"] == list(range(9, 16))


@pytest.mark.slow
def test_the_fix_script_reproduces_a_components_export_from_the_folder(checkpoints, tmp_path: Path) -> None:
    import subprocess
    import sys

    from fixport.core.fixing.fix_script import write_fix_script
    from fixport.core.project.project import Project, load_project, save_project

    project = Project(model_path=str(checkpoints["llama"]), task="text-generation", component="decode")
    save_project(project, tmp_path / "llama.fixport.json")
    reopened = load_project(tmp_path / "llama.fixport.json")
    assert (reopened.task, reopened.component) == ("text-generation", "decode")
    script = write_fix_script(reopened, tmp_path / "fix_llama.py", str(tmp_path / "decode.onnx"))
    text = script.read_text()
    assert "TASK = 'text-generation'" in text and "COMPONENT = 'decode'" in text
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked at batch=3, past_plus_1=12, past=11" in done.stdout
    import onnx

    names = [i.name for i in onnx.load(str(tmp_path / "decode.onnx")).graph.input]
    assert {"input_ids", "attention_mask", "input.cache.layers.0.keys"} <= set(names)  # transformers' names


@pytest.mark.slow  # the Llama folder's generation check stays in the fast tier
@pytest.mark.parametrize("name, task", [("t5", "text2text-generation"), ("whisper", "automatic-speech-recognition")])
def test_an_encoder_decoder_folder_generates_past_its_traced_decoder_length(worker, checkpoints, name, task) -> None:
    """The decoder's past grows with the decoding, not with the encoder's input: a decode exported at past 1
    must run at past 7."""
    result = worker.run(AnalyzeRequest(ModelRequest(str(checkpoints[name]), component="decode")))
    assert result.unsupported == [], [p.message for p in result.unsupported]
    assert result.task == task and result.generation.passed
    assert {past for run in result.generation.runs for past in run.past_lengths} == set(range(1, 8))
    assert any("past=2" in label for label in result.other_sizes_checked)


def test_an_input_the_config_does_not_size_is_named_and_given_with_input(worker, tmp_path: Path) -> None:
    from fixport.core.project.inputs import InputOptions, parse_input_spec

    folder = tmp_path / "resnet"
    transformers.ResNetForImageClassification(transformers.ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3)).save_pretrained(folder)
    with pytest.raises(FixportError, match="takes pixel_values, and its config.json has no image_size") as missing:
        worker.run(AnalyzeRequest(ModelRequest(str(folder))))
    assert "--input pixel_values=" in missing.value.hint
    given = InputOptions(specs=[parse_input_spec("pixel_values=2x3x32x32")])
    result = worker.run(AnalyzeRequest(ModelRequest(str(folder), inputs=given)))
    assert result.unsupported == [] and result.input_shapes == [(2, 3, 32, 32)]
    assert result.other_sizes_checked and result.other_sizes_checked[0].startswith("batch=")


def _clip():
    return transformers.CLIPModel(transformers.CLIPConfig(
        text_config={"vocab_size": 100, "hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 32},
        vision_config={"image_size": 32, "patch_size": 8, "hidden_size": 32, "intermediate_size": 37,
                       "num_hidden_layers": 1, "num_attention_heads": 2}, projection_dim=16))


def _segformer():
    return transformers.SegformerForSemanticSegmentation(transformers.SegformerConfig(
        image_size=32, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
        num_attention_heads=[1, 2], mlp_ratios=[2, 2], decoder_hidden_size=16, num_labels=3, strides=[4, 2],
        patch_sizes=[7, 3]))


@pytest.mark.parametrize("make, task, inputs", [
    (_clip, "zero-shot-image-classification", ["input_ids", "attention_mask", "pixel_values"]),
    pytest.param(_segformer, "semantic-segmentation", ["pixel_values"], marks=pytest.mark.slow)])
def test_clip_like_and_segmentation_folders_check_clean(worker, tmp_path: Path, make, task, inputs) -> None:
    make().save_pretrained(tmp_path / "model")
    result = worker.run(AnalyzeRequest(ModelRequest(str(tmp_path / "model"))))
    assert result.unsupported == [], [p.message for p in result.unsupported]
    assert (result.task, result.input_names) == (task, inputs)
    assert len(result.other_sizes_checked) == 2


def _gpt2(folder: Path) -> None:
    transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).save_pretrained(folder)


def _qwen2(folder: Path) -> None:
    transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=100, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).save_pretrained(folder)


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("make", [_gpt2, _qwen2], ids=["gpt2", "qwen2"])
def test_decoder_folders_generate_torchs_tokens_with_either_exporter(worker, tmp_path: Path, make, exporter) -> None:
    """GPT-2 and Qwen2 as save_pretrained writes them: both components clean, and 8 greedy tokens
    through the exported prefill and decode equal torch's at two batch sizes and growing pasts."""
    torch.manual_seed(0)
    make(tmp_path / "decoder")
    for component in ("prefill", "decode"):
        result = worker.run(AnalyzeRequest(ModelRequest(str(tmp_path / "decoder"), component=component),
                                           {"exporter": exporter}, generation_check=component == "decode"))
        assert result.unsupported == [], [p.message for p in result.unsupported]
    check = result.generation
    assert check.passed and check.tokens == 8, check.lines()
    assert len({run.batch for run in check.runs}) >= 2
    assert len({past for run in check.runs for past in run.past_lengths}) >= 2
