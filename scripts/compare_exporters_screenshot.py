"""Render the README's Compare exporters screenshots: the softplus head whose TorchScript export drops
the threshold, after Run > Compare exporters, at a common laptop size: the report, then both graphs.

Usage: QT_QPA_PLATFORM=offscreen python scripts/compare_exporters_screenshot.py [--out docs/screenshots]
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

from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from fixport.gui.main_window import MainWindow  # noqa: E402
from scripts.screenshots import wait  # noqa: E402

LAPTOP_SIZE = (1366, 768)
DOCK_HEIGHT = 380  # px: the report's three tables readable under the graphs
SOFTPLUS_HEAD = '''
    import torch
    from torch import nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(6, 6)
            self.act = nn.Softplus(beta=2.0, threshold=1.0)

        def forward(self, x):
            y = self.act(self.proj(x))
            return y * 2


    def build():
        torch.manual_seed(0)
        return Head().eval(), (torch.randn(2, 6),)
'''


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="docs/screenshots")
    args = parser.parse_args()
    model = Path(tempfile.mkdtemp()) / "softplus_head.py"
    model.write_text(textwrap.dedent(SOFTPLUS_HEAD).lstrip(), encoding="utf-8")
    app = QApplication(sys.argv[:1])
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.resize(*LAPTOP_SIZE)
    window.show()
    window.open_path(model)
    wait(app, window)
    window.actions["compare_exporters"].trigger()
    wait(app, window, 1.5)
    dock = window.exporter_comparison
    print(dock.result.verdict() if dock.result else window.log.contents())
    window.resizeDocks([dock], [DOCK_HEIGHT], Qt.Orientation.Vertical)
    wait(app, window, 1.0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(out / "compare-exporters.png"))
    dock.tabs.setCurrentIndex(1)
    if dock.result and dock.result.first_difference:
        dock.select_in_graphs(dock.result.first_difference)
    wait(app, window, 1.5)
    window.grab().save(str(out / "compare-exporters-graphs.png"))
    window.close()


if __name__ == "__main__":
    main()
