"""What an ONNX Runtime session is fed: arrays matched to its inputs."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnxruntime as ort


def feeds_for(session: ort.InferenceSession, names: Sequence[str],
              arrays: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Map arrays to the session's inputs by name, else by position."""
    wanted = [i.name for i in session.get_inputs()]
    by_name = dict(zip(names, arrays))
    if all(name in by_name for name in wanted):
        return {name: by_name[name] for name in wanted}
    return dict(zip(wanted, arrays))
