"""The task of a checkpoint folder, from its config (the fix script's support is its home)."""
from __future__ import annotations

from fixport.core.script_support.checkpoint_tasks import (
    GENERATION_TASKS,
    TASK_AUTO_CLASSES,
    auto_class_for,
    task_names,
    task_of,
)

__all__ = [
    "GENERATION_TASKS", "TASK_AUTO_CLASSES", "auto_class_for", "task_names", "task_of"
]
