"""Render the user guide's Fix all screenshot: the Swin example at opset 10, its 14 problems fixed by one click.

Usage: QT_QPA_PLATFORM=offscreen python scripts/fix_all_screenshot.py [--out docs/screenshots/fix-all.png]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["FIXPORT_DATA_DIR"] = tempfile.mkdtemp(prefix="fixport-screenshots-")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from fixport.examples.catalog import example_path  # noqa: E402
from fixport.gui.main_window import MainWindow  # noqa: E402
from scripts.screenshots import WINDOW_SIZE, wait  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="docs/screenshots/fix-all.png")
    args = parser.parse_args()
    app = QApplication(sys.argv[:1])
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.resize(*WINDOW_SIZE)
    window.show()
    window.open_path(example_path("swin_tiny"))
    wait(app, window)
    print(f"opened: {len(window.workbench.analysis.unsupported)} problems")
    window.actions["fix_all"].trigger()
    wait(app, window, 1.5)
    print(f"after Fix all: {len(window.workbench.analysis.unsupported)} problems, "
          f"opset {window.workbench.analysis.options.opset}")
    window.problems.tree.setCurrentItem(window.problems.tree.topLevelItem(0))
    wait(app, window, 1.0)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    window.grab().save(args.out)
    window.close()


if __name__ == "__main__":
    main()
