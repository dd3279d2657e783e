"""Save a checkpoint component the way transformers' ``ExportedModel.save_pretrained`` saves it.

One ``<component>.onnx`` (its weights in ``<component>.onnx.data``) per component, ``export.json``
naming each component's file with the metadata transformers' exporter records (traced kwargs,
pytree specs, dtype), and the model's config (and generation config). Each component's export
adds its own entry, so the components of one folder may be exported one command at a time; the
graph written is Fixport's, with the project's fixes applied, and
``transformers.exporters.ExportedModel.from_pretrained(DIR)`` runs it.

A component of the plain path (no transformers.exporters, or ``--component model`` on a generative
task) has no metadata of transformers' exporter to record: ``model.onnx`` and the config only.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.onnx_files import save_model_with_external_data
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.project.atomic_files import atomic_write_bytes
from fixport.core.project.export_options import ExportOptions
from fixport.core.words.errors import ExportError

EXPORT_MANIFEST_FILE = "export.json"  # transformers.exporters.base.EXPORT_MANIFEST_FILE
ONNX_FORMAT = "onnx"


def save_checkpoint_component(loaded: LoadedModel, model: OnnxModel, options: ExportOptions,
                              directory: str | Path, link_weights: bool = False) -> list[str]:
    """Write the component into ``directory`` in transformers' layout; the files written.
    ``link_weights``: a copy only Fixport reads (see ``save_model_with_external_data``)."""
    info = loaded.checkpoint
    assert info is not None, "only a checkpoint folder's component is saved in transformers' layout"
    directory = Path(directory)
    if directory.suffix == ".onnx" or directory.is_file():
        raise ExportError(f"A checkpoint folder exports to a directory (one .onnx per component, export.json and "
                          f"the config), not to the file {directory.name}.",
                          "Give -o a directory, e.g. -o exported/.")
    directory.mkdir(parents=True, exist_ok=True)
    file_name = f"{info.component}.onnx"
    written = [str(p) for p in save_model_with_external_data(model, directory / file_name, link_weights)]
    if info.plain:
        info.config.save_pretrained(directory)
        return written
    from transformers.exporters.base import EXPORT_MANIFEST_FILE as manifest_name
    from transformers.exporters.base import EXPORT_SCHEMA_VERSION

    manifest_path = directory / manifest_name
    manifest = _existing_manifest(manifest_path, EXPORT_SCHEMA_VERSION)
    manifest["components"][info.component] = {"file": file_name,
                                              "metadata": dataclasses.asdict(_metadata(loaded, options))}
    atomic_write_bytes(manifest_path, (json.dumps(manifest, indent=2) + "\n").encode())
    if info.config is not None:
        info.config.save_pretrained(directory)
    if info.generation_config is not None:
        info.generation_config.save_pretrained(directory)
    return [*written, str(manifest_path)]


def written_component(loaded: LoadedModel, directory: str | Path | None, component: str) -> Path | None:
    """The ``component``'s ONNX file an earlier export of the same checkpoint wrote into ``directory``
    (transformers' layout: listed in export.json, beside the same config), or None."""
    info = loaded.checkpoint
    if directory is None or info is None or info.plain or info.config is None or not Path(directory).is_dir():
        return None
    from transformers import AutoConfig
    from transformers.exporters.base import EXPORT_MANIFEST_FILE as manifest_name
    from transformers.exporters.base import EXPORT_SCHEMA_VERSION

    directory = Path(directory)
    entry = _existing_manifest(directory / manifest_name, EXPORT_SCHEMA_VERSION)["components"].get(component)
    if not isinstance(entry, dict) or not (directory / str(entry.get("file", ""))).is_file():
        return None
    try:
        same_config = _settings(AutoConfig.from_pretrained(directory)) == _settings(info.config)
    except (OSError, ValueError):
        return None
    return directory / entry["file"] if same_config else None


def _settings(config: Any) -> dict[str, Any]:
    """A config's settings, without where it was read from and which transformers wrote it."""
    return {key: value for key, value in config.to_dict().items()
            if not key.startswith("_") and key != "transformers_version"}


def _existing_manifest(path: Path, schema_version: int) -> dict[str, Any]:
    """The manifest the other components' exports wrote (a fresh one where there is none, or not an ONNX one)."""
    fresh = {"schema_version": schema_version, "export_format": ONNX_FORMAT, "components": {}}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return fresh
    if manifest.get("export_format") != ONNX_FORMAT or not isinstance(manifest.get("components"), dict):
        return fresh
    return manifest


def _metadata(loaded: LoadedModel, options: ExportOptions) -> Any:
    """What transformers' exporter records about a graph, for the graph Fixport exported."""
    from transformers.exporters.configs import OnnxConfig
    from transformers.exporters.metadata import (
        ExportMetadata,
        _describe_traced_kwarg,
        _package_versions,
        record_output_structure,
    )

    info = loaded.checkpoint
    kwargs = info.kwargs
    wrapped = _patched_component(loaded)
    dtype = next((p.dtype for p in wrapped.model.parameters()), torch.get_default_dtype())
    metadata = ExportMetadata(
        architecture=type(wrapped.model).__name__,
        packages=_package_versions(["torch", "onnx", "onnxscript"]),
        export_config=json.loads(OnnxConfig(dynamic=bool(options.dynamic_axes),
                                            opset_version=options.opset).to_json_string()),
        export_dtype=str(dtype).removeprefix("torch."),
        export_device="cpu",
        kwargs={name: _describe_traced_kwarg(value) for name, value in kwargs.items()},
        in_constants={name: value for name, value in kwargs.items()
                      if value is None or isinstance(value, (bool, int, float, str))},
        in_spec=torch.utils._pytree.treespec_dumps(torch.utils._pytree.tree_structure(((), dict(kwargs)))),
    )
    with torch.no_grad():
        record_output_structure(metadata, wrapped.model_outputs(**kwargs))
    return metadata


def _patched_component(loaded: LoadedModel) -> Any:
    """The PatchedForExport inside the loaded module (a StructuredCall wraps it)."""
    from fixport.core.foundation.checkpoints.folder import PatchedForExport

    for module in loaded.module.modules():
        if isinstance(module, PatchedForExport):
            return module
    raise ExportError("The checkpoint's component is not wrapped as it was loaded.",
                      "This is a Fixport bug; please report it with the log file.")
