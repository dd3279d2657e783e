"""A checkpoint's task, read from its config's ``architectures`` through transformers' own auto mappings.

The task names are the ones people know from transformers' pipelines and optimum. Each names the
``AutoModelFor*`` class that loads a model for it; which architecture belongs to which task is
transformers' knowledge (each auto class's mapping of model types to classes), never a table here.
The table imports no torch: the window and the command line offer its tasks (``CHECKPOINT_TASKS``).
"""
from __future__ import annotations

from typing import Any

from ..errors import ModelLoadError

# The input an image model takes (transformers' main_input_name); inputs.py makes it.
IMAGE_INPUT = "pixel_values"
# Task -> the auto classes that load a model for it, in the order they are tried. A task listed
# earlier wins where one architecture serves several (CLIPModel: zero-shot before features).
TASK_AUTO_CLASSES: dict[str, tuple[str, ...]] = {
    "text-generation": ("AutoModelForCausalLM",),
    "text2text-generation": ("AutoModelForSeq2SeqLM",),
    "automatic-speech-recognition": ("AutoModelForSpeechSeq2Seq", "AutoModelForCTC"),
    "fill-mask": ("AutoModelForMaskedLM",),
    "text-classification": ("AutoModelForSequenceClassification",),
    "token-classification": ("AutoModelForTokenClassification",),
    "question-answering": ("AutoModelForQuestionAnswering",),
    "image-classification": ("AutoModelForImageClassification",),
    "object-detection": ("AutoModelForObjectDetection",),
    "semantic-segmentation": ("AutoModelForSemanticSegmentation",),
    "zero-shot-image-classification": ("AutoModelForZeroShotImageClassification",),
    "feature-extraction": ("AutoModel",),
    "image-feature-extraction": ("AutoModel",),
}
# Tasks whose model generates: exported as transformers' exporter decomposes generation.
GENERATION_TASKS = ("text-generation", "text2text-generation", "automatic-speech-recognition")


def task_names() -> list[str]:
    return list(TASK_AUTO_CLASSES)


def task_of(config: Any) -> str:
    """The task of the config's first architecture that one of the tasks' auto classes loads."""
    architectures = list(getattr(config, "architectures", None) or [])
    for architecture in architectures:
        for task in TASK_AUTO_CLASSES:
            if _auto_class_loading(task, config, architecture) is not None:
                return _feature_task(task, architecture)
    named = (f"names architectures {', '.join(architectures)}, which no task Fixport knows loads" if architectures
             else "names no architectures")
    raise ModelLoadError(f"The checkpoint's config.json {named}.",
                         f"Name the task with --task ({', '.join(task_names())}).")


def auto_class_for(task: str, config: Any) -> Any:
    """The auto class that loads the checkpoint for ``task`` (the first whose mapping knows the config)."""
    if task not in TASK_AUTO_CLASSES:
        raise ModelLoadError(f"Unknown task {task!r}.", f"Use one of: {', '.join(task_names())}.")
    import transformers

    for name in TASK_AUTO_CLASSES[task]:
        auto_class = getattr(transformers, name)
        if type(config) in auto_class._model_mapping:
            return auto_class
    raise ModelLoadError(f"transformers has no model for the task {task} with a {type(config).__name__} "
                         f"({getattr(config, 'model_type', '?')}).",
                         f"Choose another task with --task; its config.json names {_architectures(config)}.")


def _auto_class_loading(task: str, config: Any, architecture: str) -> Any:
    """The task's auto class whose mapping holds ``architecture`` for this config's model type, else None."""
    import transformers

    for name in TASK_AUTO_CLASSES[task]:
        names = getattr(transformers, name)._model_mapping._model_mapping  # model_type -> class name(s)
        found = names.get(getattr(config, "model_type", ""), ())
        if architecture in ((found,) if isinstance(found, str) else tuple(found)):
            return getattr(transformers, name)
    return None


def _feature_task(task: str, architecture: str) -> str:
    """A bare model (AutoModel) extracts image features where its main input is an image."""
    if task != "feature-extraction":
        return task
    import transformers

    model_class = getattr(transformers, architecture, None)
    return "image-feature-extraction" if getattr(model_class, "main_input_name", "") == IMAGE_INPUT else task


def _architectures(config: Any) -> str:
    return ", ".join(getattr(config, "architectures", None) or []) or "no architectures"
