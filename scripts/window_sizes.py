"""Render the window at common screen sizes for the docs: after Compare (the table, then the Plots
tab) on an example, and after Run > Compare exporters on the softplus head, each size in turn.

Usage: QT_QPA_PLATFORM=offscreen python scripts/window_sizes.py [--out docs/screenshots]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["FIXPORT_DATA_DIR"] = tempfile.mkdtemp(prefix="fixport-screenshots-")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from fixport.examples.catalog import example_path  # noqa: E402
from fixport.gui.main_window import MainWindow  # noqa: E402
from scripts.compare_exporters_screenshot import SOFTPLUS_HEAD  # noqa: E402
from scripts.screenshots import wait  # noqa: E402

SIZES = ((1366, 768), (1920, 1080))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="docs/screenshots")
    parser.add_argument("--example", default="vit_tiny")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    head = Path(tempfile.mkdtemp()) / "softplus_head.py"
    head.write_text(textwrap.dedent(SOFTPLUS_HEAD).lstrip(), encoding="utf-8")
    app = QApplication(sys.argv[:1])
    for width, height in SIZES:
        settings = QSettings(str(Path(tempfile.mkdtemp()) / "settings.ini"), QSettings.Format.IniFormat)
        window = MainWindow(settings=settings)
        window.resize(width, height)
        window.show()
        window.open_path(example_path(args.example))
        wait(app, window, 1.5)
        window.actions["compare"].trigger()
        wait(app, window, 1.5)
        window.grab().save(str(out / f"compare-{width}x{height}.png"))
        window.plots.raise_()
        wait(app, window, 1.0)
        window.grab().save(str(out / f"plots-{width}x{height}.png"))
        window.open_path(head)
        wait(app, window, 1.5)
        window.actions["compare_exporters"].trigger()
        wait(app, window, 2.0)
        window.grab().save(str(out / f"compare-exporters-{width}x{height}.png"))
        window.close()


if __name__ == "__main__":
    main()
