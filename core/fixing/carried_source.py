"""Fixport's code as text, for the fix script to carry whole: the support package
(``fixport.core.foundation``), the exporter's part of the script, and the modules a fix
imports; with the imports the script's own lines need.

Everything is read from the files, never imported: the command line and the window write
scripts, and they never import torch, which these modules do.
"""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

FIXPORT_ROOT = Path(__file__).resolve().parents[2]  # the folder of the package `fixport`
SUPPORT_PACKAGE = "fixport.core.foundation"
SCRIPT_SUPPORT = "fix_script_support"  # the support package's name inside a script: it imports no fixport
EXPORTER_PART = f"{SCRIPT_SUPPORT}.exporter_part"  # the exporter's part, inside a script
_SUPPORT_IMPORT_RE = re.compile(rf"\b{re.escape(SUPPORT_PACKAGE)}\b")

# Written into the script before the modules it carries: imports them from their source, which
# the script holds as text (tracebacks show their lines; "<...>" marks them as generated code).
EMBEDDED_MODULES_LOADER = '''

class EmbeddedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the modules written into this script below, from their source."""

    def __init__(self) -> None:
        self.sources: dict[str, str] = {}

    def add(self, name: str, source: str) -> None:
        self.sources[name] = source

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name not in self.sources:
            return None
        is_package = any(other.startswith(name + ".") for other in self.sources)
        origin = f"<{name}, written into {os.path.basename(__file__)}>"
        return importlib.util.spec_from_loader(name, self, origin=origin, is_package=is_package)

    def create_module(self, spec: object) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        source, filename = self.sources[module.__name__], module.__spec__.origin
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), module.__dict__)


EMBEDDED = EmbeddedModules()
sys.meta_path.insert(0, EMBEDDED)
'''
LOADER_IMPORTS = ("importlib.abc", "importlib.util", "linecache", "os", "sys", "types")


def module_path(module: str) -> Path:
    """The file of Fixport's ``module``, found without importing it or its package."""
    if module == "fixport" or module.startswith("fixport."):
        relative = Path(*module.split(".")[1:])
        for candidate in (FIXPORT_ROOT / relative / "__init__.py", (FIXPORT_ROOT / relative).with_suffix(".py")):
            if candidate.is_file():
                return candidate
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"cannot find {module}")
    return Path(spec.origin)


def module_tree(module: str) -> tuple[str, ast.Module]:
    """The source of ``module`` (found, not imported) and its syntax tree."""
    source = module_path(module).read_text(encoding="utf-8")
    return source, ast.parse(source)


def is_fixport_module(module: str | None) -> bool:
    return module is not None and (module == "fixport" or module.startswith("fixport."))


def fixport_imports(tree: ast.Module) -> list[str]:
    """The Fixport modules ``tree`` imports, anywhere in it (relative imports left out)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if is_fixport_module(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and is_fixport_module(node.module):
            found.append(node.module or "")
    return found


def support_sources() -> list[tuple[str, str]]:
    """(name in the script, source): every module of the support package and its sub-packages, whole."""
    folder = module_path(SUPPORT_PACKAGE).parent
    sources = []
    for path in sorted(folder.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        parts = path.relative_to(folder).with_suffix("").parts
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        imported = fixport_imports(ast.parse(source))
        if imported:
            raise ImportError(f"{SUPPORT_PACKAGE}.{dotted} imports {', '.join(imported)}: the fix script's "
                              "support imports only itself (relative imports), torch and the ONNX packages")
        sources.append((f"{SCRIPT_SUPPORT}.{dotted}" if dotted else SCRIPT_SUPPORT, source))
    return sources


def exporter_part_source(module: str) -> str:
    """The exporter's part (``module``), whole, its imports of the support package renamed to the
    script's; refused where it imports any other Fixport module."""
    source = _SUPPORT_IMPORT_RE.sub(SCRIPT_SUPPORT, module_path(module).read_text(encoding="utf-8"))
    imported = fixport_imports(ast.parse(source))
    if imported:
        raise ImportError(f"{module} imports {', '.join(imported)}: an exporter's fix-script part imports "
                          f"only {SUPPORT_PACKAGE}, torch and the ONNX packages")
    return source


def embedded_module(name: str, source: str) -> str:
    """``EMBEDDED.add(name, source)``: the source as a raw string, which people can read and edit,
    where it holds no triple single quote (else as ``repr`` writes it)."""
    text = source if source.endswith("\n") else source + "\n"
    literal = f"r'''{text}'''" if "'''" not in text else repr(text)
    return f"\n\n# ---- {name}, Fixport's own code ----\nEMBEDDED.add({name!r}, {literal})\n"


@dataclass(frozen=True)
class Import:
    """One name an import binds: ``import module [as alias]`` (name None) or ``from module import name [as alias]``."""

    module: str
    name: str | None = None
    alias: str | None = None

    @property
    def bound(self) -> str:
        """The name the import binds in the importing module."""
        return self.alias or (self.name if self.name is not None else self.module.split(".")[0])


def module_imports(tree: ast.Module) -> list[Import]:
    """The top-level imports of ``tree`` (``from __future__`` left out)."""
    found: list[Import] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [Import(alias.name, None, alias.asname) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            found += [Import("." * node.level + (node.module or ""), alias.name, alias.asname) for alias in node.names]
    return found


def _sorted(imports: Iterable[Import]) -> list[Import]:
    return sorted(set(imports), key=lambda i: (i.module, i.name or "", i.alias or ""))


def import_lines(imports: Iterable[Import]) -> str:
    """``imports`` as isort would write them: the standard library, then the others."""
    by_name: dict[str, Import] = {}
    for item in _sorted(imports):
        key = item.module if item.name is None and item.alias is None else item.bound  # import a.b, a.c: both fine
        if by_name.setdefault(key, item) != item:
            raise ValueError(f"the fix script would import {item.bound} twice: "
                             f"from {by_name[key].module} and from {item.module}")
    unique = _sorted(by_name.values())
    sections: list[str] = []
    for standard in (True, False):
        chosen = [i for i in unique if (i.module.split(".")[0] in sys.stdlib_module_names) == standard]
        lines = [f"import {i.module}" + (f" as {i.alias}" if i.alias else "") for i in chosen if i.name is None]
        by_module: dict[str, list[str]] = {}
        for i in chosen:
            if i.name is not None:
                by_module.setdefault(i.module, []).append(i.name + (f" as {i.alias}" if i.alias else ""))
        lines += [f"from {module} import {', '.join(names)}" for module, names in sorted(by_module.items())]
        if lines:
            sections.append("".join(line + "\n" for line in lines))
    return "\n".join(sections)
