"""Each exporter package lists every torch internal it touches (its ``torch_internals`` module), and
its profile's opset range is torch's own: the seams to check when torch moves."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest
import tomllib

from fixport.core.exporters.dynamo import torch_internals as dynamo_internals
from fixport.core.exporters.profiles import DYNAMO, TORCHSCRIPT
from fixport.core.exporters.torch_export import torch_internals as torch_export_internals
from fixport.core.exporters.torchscript import torch_internals as torchscript_internals

ROOT = Path(__file__).resolve().parents[1]
SEAMS = {"torchscript": torchscript_internals, "dynamo": dynamo_internals, "torch_export": torch_export_internals}


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def private_torch_names(source: str) -> set[str]:
    """Private torch names a module reaches: imported, or as attribute chains from torch or from a
    name imported out of torch (``registration.registry._registry``)."""
    tree = ast.parse(source)
    found: set[str] = set()
    roots = {"torch": "torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
            for alias in node.names:
                roots[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if _is_private(f"{node.module}.{alias.name}"):
                    found.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            roots.update({a.asname: a.name for a in node.names if a.asname and a.name.split(".")[0] == "torch"})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts, current = [], node
            while isinstance(current, ast.Attribute):
                parts.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id in roots:
                chain = ".".join([roots[current.id], *reversed(parts)])
                if _is_private(chain):
                    found.add(chain)
    return {name for name in found if not any(other.startswith(name + ".") for other in found)}


def _package_names(package: str) -> set[str]:
    folder = ROOT / "core" / "exporters" / package
    return set().union(*(private_torch_names(path.read_text()) for path in folder.glob("*.py")
                         if path.name != "torch_internals.py"))


def _listed(seam: ModuleType) -> set[str]:
    return {name for names in seam.TORCH_INTERNALS.values() for name in names}


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                found = getattr(found, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_the_scanner_sees_private_names_through_imported_names() -> None:
    source = ("import torch\nfrom torch.onnx._internal.torchscript_exporter import registration\n"
              "x = registration.registry._registry\ny = torch._C._jit_pass_dce\nz = torch.nn.Linear\n")
    assert private_torch_names(source) == {"torch.onnx._internal.torchscript_exporter.registration.registry._registry",
                                           "torch._C._jit_pass_dce"}


@pytest.mark.parametrize("package", SEAMS)
def test_every_private_torch_name_a_package_uses_is_listed(package: str) -> None:
    listed, used = _listed(SEAMS[package]), _package_names(package)
    assert used - listed == set(), f"add to core/exporters/{package}/torch_internals.py"
    assert listed - used == set(), f"listed in core/exporters/{package}/torch_internals.py but no longer used"


@pytest.mark.parametrize("package", SEAMS)
def test_every_listed_torch_name_resolves_in_the_installed_torch(package: str) -> None:
    assert [name for name in sorted(_listed(SEAMS[package])) if not _resolves(name)] == []


@pytest.mark.parametrize("seam", SEAMS.values(), ids=list(SEAMS))
def test_the_seams_name_the_torch_range_pyproject_pins(seam: ModuleType) -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = next(re.sub(r"^torch", "", d) for d in dependencies if re.match(r"torch[<>=]", d))
    assert seam.TORCH_RANGE == pin


def test_each_exporters_opset_range_is_torchs_own() -> None:
    from torch.onnx import _constants

    assert TORCHSCRIPT.opsets == (_constants.ONNX_MIN_OPSET, _constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET)
    assert DYNAMO.opsets == (_constants.ONNX_MIN_OPSET, _constants.ONNX_MAX_OPSET)
