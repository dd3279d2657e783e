"""Example input arrays: random ones from ``--input`` specs, or read from an ``.npz``/``.pt`` file."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fixport.core.foundation.errors import InputSpecError

__all__ = ["load_input_file"]


def load_input_file(path: str | Path) -> dict[str, np.ndarray]:
    """Named arrays from an ``.npz`` file, or tensors from a ``.pt`` file (dict, list or tensor)."""
    path = Path(path)
    if not path.exists():
        raise InputSpecError(f"Input file not found: {path}", "Check the path given to --inputs.")
    if not path.is_file():
        raise InputSpecError(f"The input file {path} is not a regular file (a folder, FIFO or device).",
                             "Save the inputs with numpy.savez or torch.save and pass that file.")
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        if path.suffix == ".pt":
            import torch

            loaded = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(loaded, torch.Tensor):
                loaded = [loaded]
            if isinstance(loaded, (list, tuple)):
                loaded = {f"input_{i}": t for i, t in enumerate(loaded)}
            if isinstance(loaded, dict) and all(isinstance(t, torch.Tensor) for t in loaded.values()):
                return {str(k): t.detach().cpu().numpy() for k, t in loaded.items()}
            raise InputSpecError(f"{path} holds {type(loaded).__name__}, not tensors.",
                                 "Save a tensor, a list of tensors or a dict of tensors with torch.save.")
    except InputSpecError:
        raise
    except Exception as exc:  # corrupt archive, pickled objects, ...
        raise InputSpecError(f"Cannot read inputs from {path}: {exc}",
                             "Save inputs with numpy.savez or torch.save (tensors only).") from exc
    raise InputSpecError(f"Unsupported input file type {path.suffix!r}.", "Use a .npz or .pt file.")
