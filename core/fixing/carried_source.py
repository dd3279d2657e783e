"""Fixport's own code as text, for the fix script to carry: top-level functions and constants of a
module, the body of a script part (``fixport.core.fixing.script_parts``), and the imports that
code needs.

Everything is read from the files with ``ast``, never imported: the command line and the window
write scripts, and they never import torch, which these modules do.
"""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

CARRIED_FIXPORT_CODE = "CARRIED_FIXPORT_CODE"  # a script part's list of the Fixport code it calls
_ANNOTATION_FIELDS = ("annotation", "returns")  # never evaluated: the script has `from __future__ import annotations`


def module_tree(module: str) -> tuple[str, ast.Module]:
    """The source of ``module`` (found, not imported) and its syntax tree."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"cannot find {module}")
    source = Path(spec.origin).read_text(encoding="utf-8")
    return source, ast.parse(source)


def is_fixport_module(module: str | None) -> bool:
    return module is not None and (module == "fixport" or module.startswith("fixport."))


def _top_level_definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update({target.id: node for target in targets if isinstance(target, ast.Name)})
    return found


def runtime_names(nodes: Iterable[ast.AST]) -> set[str]:
    """The names ``nodes`` read when they run (annotations left out)."""
    names: set[str] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        for name, value in ast.iter_fields(node):
            if name not in _ANNOTATION_FIELDS:
                pending.extend(child for child in (value if isinstance(value, list) else [value])
                               if isinstance(child, ast.AST))
    return names


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


def import_lines(imports: Iterable[Import], for_annotations: Iterable[Import] = ()) -> str:
    """``imports`` as isort would write them: the standard library, then the others. Of
    ``for_annotations`` (names read only in annotations, which never run), those whose name
    no other import binds."""
    by_name: dict[str, Import] = {}
    for item in _sorted(imports):
        if by_name.setdefault(item.bound, item) != item:
            raise ValueError(f"the fix script would import {item.bound} twice: "
                             f"from {by_name[item.bound].module} and from {item.module}")
    for item in _sorted(for_annotations):
        by_name.setdefault(item.bound, item)
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


def fixport_source(module: str, names: tuple[str, ...]) -> str:
    """The source of Fixport's top-level functions and constants ``names`` in ``module``, as
    written there (a function's decorators included)."""
    source, tree = module_tree(module)
    lines = source.splitlines(keepends=True)
    found = _top_level_definitions(tree)
    missing = [name for name in names if name not in found]
    if missing:
        raise LookupError(f"{module} has no {', '.join(missing)}")
    blocks = []
    for name in names:
        node = found[name]
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        text = "".join(lines[first - 1:node.end_lineno])
        blocks.append(f"\n\n{text}" if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else text)
    return f"\n\n# ---- from {module} (Fixport's own code) ----\n" + "".join(blocks).lstrip("\n")


def fixport_namespace(variable: str, module: str, names: tuple[str, ...]) -> str:
    """Fixport's code from ``module`` kept apart under ``variable`` (its names would clash)."""
    body = textwrap.indent(fixport_source(module, names).strip("\n").replace("\n\n\n", "\n\n"), "    ")
    return (f"\n\ndef _{variable}():\n{body}\n\n    return types.SimpleNamespace(**locals())\n\n\n"
            f"{variable} = _{variable}()\n")


@dataclass(frozen=True)
class CarriedNames:
    """Top-level names of one Fixport module that the script carries, optionally under a namespace."""

    module: str
    names: tuple[str, ...]
    namespace: str | None = None


@dataclass
class CarriedCode:
    """Fixport code gathered for the script: its text, the imports it needs and the names it defines."""

    text: str = ""
    imports: set[Import] = field(default_factory=set)  # what it reads when it runs
    annotation_imports: set[Import] = field(default_factory=set)  # what its annotations name
    defined: set[str] = field(default_factory=set)
    namespaces: dict[str, CarriedNames] = field(default_factory=dict)  # by module
    required: dict[str, set[str]] = field(default_factory=dict)  # names each carried module's code reads

    def aliases(self, imports: Iterable[Import]) -> str:
        """``name = namespace.name`` for each of ``imports`` that comes from a namespaced module."""
        lines = []
        for item in imports:
            carried = self.namespaces.get(item.module)
            if carried and item.name in carried.names and item.bound not in self.defined:
                lines.append(f"{item.bound} = {carried.namespace}.{item.name}\n")
                self.defined.add(item.bound)
        return "".join(lines)

    def require(self, names: Iterable[str], user: str) -> None:
        """Note that ``user``'s code reads ``names`` (checked by :meth:`check_required`)."""
        self.required.setdefault(user, set()).update(names)

    def check_required(self) -> None:
        """Fail now, not when the script runs, if code in it reads a name the script never defines."""
        for user, names in self.required.items():
            missing = sorted(names - self.defined)
            if missing:
                raise LookupError(f"the fix script does not define {', '.join(missing)}, which {user} uses: "
                                  f"name it in a script part's {CARRIED_FIXPORT_CODE}")

    def add_definitions(self, names: Iterable[str], owner: str) -> None:
        clashing = sorted(set(names) & self.defined)
        if clashing:
            raise ValueError(f"{owner} defines {', '.join(clashing)} again in the fix script")
        self.defined.update(names)


def carry(entries: Iterable[CarriedNames]) -> CarriedCode:
    """The source of every entry (merged by module, in order), with the imports it needs at run time;
    call ``check_required`` once the script's other code is added."""
    merged: dict[tuple[str, str | None], list[str]] = {}
    for entry in entries:
        names = merged.setdefault((entry.module, entry.namespace), [])
        names += [name for name in entry.names if name not in names]
    code = CarriedCode()
    for (module, namespace), names in merged.items():
        source, tree = module_tree(module)
        definitions = _top_level_definitions(tree)
        carried_nodes = [definitions[name] for name in names if name in definitions]
        used = runtime_names(carried_nodes)
        named = {name.id for node in carried_nodes for name in ast.walk(node) if isinstance(name, ast.Name)}
        imports = module_imports(tree)
        others = [item for item in imports if not is_fixport_module(item.module)]
        code.imports |= {item for item in others if item.bound in used}
        code.annotation_imports |= {item for item in others if item.bound in named - used}
        if namespace is not None:
            code.text += fixport_namespace(namespace, module, tuple(names))
            code.imports.add(Import("types"))
            code.add_definitions([namespace], module)
            code.namespaces[module] = CarriedNames(module, tuple(names), namespace)
            continue
        fixport_imports = [item for item in imports if is_fixport_module(item.module) and item.bound in used]
        code.text += code.aliases(fixport_imports) + fixport_source(module, tuple(names))
        code.add_definitions(names, module)
        fixport_names = {item.bound for item in imports if is_fixport_module(item.module)}
        code.require(used & (fixport_names | set(definitions)), module)  # Fixport's, or its own helpers
    return code


_DOUBLE_BLANK = re.compile(r"\n{4,}")


@dataclass(frozen=True)
class ScriptPart:
    """One module of ``fixport.core.fixing.script_parts`` as the script carries it."""

    module: str
    body: str  # its source without docstring, imports and CARRIED_FIXPORT_CODE
    imports: tuple[Import, ...]  # all but Fixport's: they go to the script's top
    fixport_imports: tuple[Import, ...]  # the script defines these itself, by carrying their source
    carried: tuple[CarriedNames, ...]  # its CARRIED_FIXPORT_CODE
    defined: frozenset[str]  # the top-level names its body defines


def read_script_part(module: str) -> ScriptPart:
    """Read the script part ``module`` as text."""
    source, tree = module_tree(module)
    lines = source.splitlines(keepends=True)
    kept: list[str] = []
    carried: tuple[CarriedNames, ...] = ()
    previous_end = 0
    for index, node in enumerate(tree.body):
        segment = "".join(lines[previous_end:node.end_lineno])  # with the comments above the statement
        previous_end = node.end_lineno or previous_end
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [
                CARRIED_FIXPORT_CODE]:
            carried = tuple(CarriedNames(*entry) for entry in ast.literal_eval(node.value))
            continue
        is_docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not is_docstring and not isinstance(node, (ast.Import, ast.ImportFrom)):
            kept.append(segment)
    body = _DOUBLE_BLANK.sub("\n\n\n", "".join(kept).strip("\n") + "\n")
    imports = module_imports(tree)
    definitions = _top_level_definitions(tree)
    definitions.pop(CARRIED_FIXPORT_CODE, None)
    return ScriptPart(module=module, body=body,
                      imports=tuple(i for i in imports if not is_fixport_module(i.module)),
                      fixport_imports=tuple(i for i in imports if is_fixport_module(i.module)),
                      carried=carried, defined=frozenset(definitions))
