"""Render the README's sweep screenshot: a sweep's JSON opened in the window (File ▸ Open sweep results…).

Usage: QT_QPA_PLATFORM=offscreen python scripts/sweep_screenshot.py SWEEP.json [--out docs/screenshots/sweep.png]
(SWEEP.json from e.g. `python main.py sweep examples/corpus --fix --jobs 2 --json SWEEP.json`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtWidgets import QApplication  # noqa: E402

from fixport.core.sweep.reports import read_sweep_json  # noqa: E402
from fixport.gui.sweep_results import SweepResultsDialog  # noqa: E402

SCREENSHOT_SIZE = (1366, 640)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sweep")
    parser.add_argument("--out", default="docs/screenshots/sweep.png")
    args = parser.parse_args()
    app = QApplication(sys.argv[:1])
    dialog = SweepResultsDialog(read_sweep_json(Path(args.sweep)), Path(args.sweep))
    dialog.resize(*SCREENSHOT_SIZE)
    dialog.show()
    app.processEvents()
    dialog.grab().save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
