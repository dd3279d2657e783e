"""Finished rows on disk, keyed by the model's content and the sweep's options: a rerun resumes."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fixport.core.project.atomic_files import atomic_write_bytes
from fixport.core.sweep.rows import SweepRow, SweepSettings
from fixport.core.sweep.targets import content_hash

CACHE_FORMAT_VERSION = 2  # bump when a row's meaning changes: older rows are then recomputed
DEFAULT_CACHE_FOLDER = ".fixport-sweep"


class SweepCache:
    """One JSON file per finished row, written atomically (a sweep stopped mid-write leaves no half row)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._hashes: dict[Path, str] = {}

    def key(self, model: Path, exporter: str, settings: SweepSettings) -> str:
        if model not in self._hashes:
            self._hashes[model] = content_hash(model)
        identity = {"format": CACHE_FORMAT_VERSION, "model": str(model), "content": self._hashes[model],
                    **settings.cache_fields(exporter)}
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]

    def load(self, model: Path, exporter: str, settings: SweepSettings) -> SweepRow | None:
        """The row a sweep finished before for this model, content and options, or None."""
        path = self.folder / f"{self.key(model, exporter, settings)}.json"
        try:
            row = SweepRow.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None  # not there, or unreadable: computed again
        row.cached = True
        return row

    def store(self, row: SweepRow, settings: SweepSettings) -> None:
        model = Path(row.model)
        data = {**row.to_json(), "cached": False}
        atomic_write_bytes(self.folder / f"{self.key(model, row.exporter, settings)}.json",
                           json.dumps(data, indent=1).encode())
