"""Write a standalone Python script that reproduces a project's fixed export without Fixport.

The script needs only torch, onnx (onnxscript for the dynamo exporter), onnxruntime, numpy and the
model file. After writing the file it runs it in ONNX Runtime against torch at the example inputs
and at the other sizes of the declared dynamic axes, and exits 1 where they differ.
It is put together from:

* the fix script's support package (``fixport.core.foundation``), every module whole, as
  ``fix_script_support``: it opens the model, makes its inputs and checks what was written, as
  Fixport does (tests run both on the same models);
* the part the exporter's profile names (``fix_script_part``), whole, which registers the fixes
  and calls the exporter (its ``export_with_fixes(job)``);
* each fix's source as it is in the project, inside a function (several templates' module-level
  names cannot clash), and a table of the fixes for the exporter's part to register.

The script's own lines call only the support's public API. What Fixport chose is written as
Python values with ``repr``; nothing here is torch, and no exporter is named: the profile says
which part to carry.
"""
from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
import time
from pathlib import Path
from typing import Any

from fixport.core.deployment.optimizer_script import deployment_section
from fixport.core.exporters.profiles import ExporterProfile, profile_for
from fixport.core.fixing.carried_source import (
    EMBEDDED_MODULES_LOADER,
    EXPORTER_PART,
    LOADER_IMPORTS,
    SCRIPT_SUPPORT,
    Import,
    embedded_module,
    exporter_part_source,
    fixport_imports,
    import_lines,
    module_imports,
    module_tree,
    support_sources,
)
from fixport.core.project.atomic_files import atomic_write_text
from fixport.core.project.inputs import InputSpec, parse_input_spec
from fixport.core.project.project import FixMapping, Project
from fixport.core.project.template_form import PARAMS_NAME, defines_params, import_block, injected_names_used

# Options the script keeps apart from EXPORT_OPTIONS: OPSET, CUSTOM_OPSETS, and the part carried.
SCRIPT_LEVEL_OPTIONS = ("opset", "custom_opsets", "exporter")
# What the script's own lines need: MODEL_PATH (os) and the InputSpec record (collections).
SETTINGS_IMPORTS = (Import("os"), Import("collections"))
# The support's public API that the script's own lines call, and the exporter part's one function.
SCRIPT_API = ("ScriptFix", "ScriptSettings", "carry_module", "main")
# common.ScriptSettings' fields, each written at the script's top as a constant of its name in capitals.
SETTINGS_FIELDS = ("model_path", "trust", "input_specs", "input_file", "seed", "opset", "default_opset", "output",
                   "export_options", "custom_opsets", "task", "component", "dtype")
MODEL_FILE_SETTINGS = "FIXPORT_EXAMPLE"  # a .py model file's own settings (opset, export_options, ...)
EXPORT_FUNCTION = "export_with_fixes"  # what every exporter's part defines: export_with_fixes(job: ExportJob)
_FIXPORT_IMPORT_RE = re.compile(r"^\s*from (fixport\.[\w.]+) import", re.M)


def python_literal(value: Any) -> str:
    """``value`` as Python source (``repr``), refused unless it reads back as the same literal."""
    text = repr(value)
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"cannot write {text} into the fix script as a Python literal") from error
    return text


def _docstring_safe(text: str) -> str:
    return text.replace("\\", "/").replace('"', "'")


def _header(project: Project, script_path: Path, profile: ExporterProfile) -> str:
    return (f'#!/usr/bin/env python3\n"""Export {_docstring_safe(Path(project.model_path).name)} to ONNX with the '
            f'fixes chosen in Fixport ({time.strftime("%Y-%m-%d")}).\n\n'
            f"Exporter: {profile.title}.\n"
            "Standalone: needs torch, onnx, onnxruntime, numpy and the model file, not Fixport.\n"
            "It checks the written file in ONNX Runtime against torch at the example inputs and at other\n"
            "sizes of the declared dynamic axes (exit status 1 where they differ; --no-check skips that).\n"
            f'Run:  python {_docstring_safe(script_path.name)} [-o OUTPUT.onnx] [--no-check]\n"""\n'
            "from __future__ import annotations\n\n")


def _settings(project: Project, script_path: Path, output_onnx: str, opset: int | None) -> str:
    """What Fixport chose, as Python values at the script's top, where people edit it."""
    try:
        model_path = str(Path(project.model_path).resolve().relative_to(script_path.parent))
    except ValueError:
        model_path = str(Path(project.model_path).resolve())
    fields = [field.name for field in dataclasses.fields(InputSpec)]
    specs = [parse_input_spec(text) for text in project.input_specs]
    spec_values = ", ".join(
        "InputSpec(" + ", ".join(f"{name}={python_literal(getattr(spec, name))}" for name in fields) + ")"
        for spec in specs)
    custom_opsets = dict(project.export_options.get("custom_opsets", {}))
    for mapping in project.mappings:
        custom_opsets.update(mapping.domain_opsets())
    options = {k: v for k, v in project.export_options.items() if k not in SCRIPT_LEVEL_OPTIONS}
    profile = script_profile(project)
    return "\n".join([
        "\n# ---- what Fixport chose ----",
        f"MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), {python_literal(model_path)})",
        f"TRUST = {python_literal(project.trust)}  # True: open a pickled model with torch.load, which runs its code",
        f"InputSpec = collections.namedtuple('InputSpec', {python_literal(fields)})",
        f"INPUT_SPECS = [{spec_values}]  # random with SEED; empty: the model file's own inputs",
        f"INPUT_FILE = {python_literal(project.input_file)}",
        f"SEED = {python_literal(project.seed)}",
        f"OPSET = {python_literal(project.export_options.get('opset') or opset)}"
        "  # None: the model file's FIXPORT_EXAMPLE opset, else DEFAULT_OPSET",
        f"DEFAULT_OPSET = {python_literal(profile.default_opset)}"
        + ("" if profile.default_opset else "  # None: torch.onnx.export's own default for this exporter"),
        f"OUTPUT = {python_literal(output_onnx)}  # -o OUTPUT.onnx replaces it",
        f"EXPORT_OPTIONS = {python_literal(options)}",
        *_model_file_options_comment(project.model_path, options),
        f"CUSTOM_OPSETS = {python_literal(custom_opsets)}",
        f"TASK = {python_literal(project.task)}  # a checkpoint folder's task; None: from its config.json",
        f"COMPONENT = {python_literal(project.component)}  # a checkpoint folder's component; None: the first",
        f"DTYPE = {python_literal(project.dtype)}  # a checkpoint folder's export dtype; None: the checkpoint's own",
    ]) + "\n"


def model_file_export_options(model_path: str) -> dict[str, Any]:
    """A model file's ``FIXPORT_EXAMPLE["export_options"]``, read without running the file ({} where
    it is no .py file, or the value is not written as a literal)."""
    if not model_path.endswith(".py"):
        return {}
    try:
        tree = ast.parse(Path(model_path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == MODEL_FILE_SETTINGS
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            options = value.get("export_options") if isinstance(value, dict) else None
            return dict(options) if isinstance(options, dict) else {}
    return {}


def script_profile(project: Project) -> ExporterProfile:
    """The exporter the script exports with: the project's, else the model file's own
    (``FIXPORT_EXAMPLE``), as Fixport resolves it."""
    return profile_for(project.export_options.get("exporter")
                       or model_file_export_options(project.model_path).get("exporter"))


def _model_file_options_comment(model_path: str, options: dict[str, Any]) -> list[str]:
    """What the model file's own export options add to EXPORT_OPTIONS (its dynamic axes, say), as a comment."""
    added = {k: v for k, v in model_file_export_options(model_path).items()
             if k not in options and k not in SCRIPT_LEVEL_OPTIONS}
    if not added:
        return []
    return [f"# and from the model file's {MODEL_FILE_SETTINGS}['export_options'] where EXPORT_OPTIONS sets none:",
            *(f"#   {key} = {value!r}" for key, value in added.items())]


def carried_modules(mappings: list[FixMapping]) -> str:
    """Fixport modules that fixes import (the torch_lib bridge, decomposition replay), carried as
    they are in Fixport's files; they import only torch, onnx and onnxscript."""
    parts = []
    for name in _with_their_imports(sorted({name for mapping in mappings
                                            for name in _FIXPORT_IMPORT_RE.findall(mapping.source)})):
        source, _ = module_tree(name)
        parts.append(f"\n\n# ---- {name} (Fixport's own code, imported by a fix) ----\n"
                     f"carry_module({name!r}, {source!r})\n")
    return "".join(parts)


def _with_their_imports(modules: list[str]) -> list[str]:
    """``modules`` and the Fixport modules they import, each after those it imports (the script runs
    each carried module as it is carried)."""
    ordered: list[str] = []
    visiting: set[str] = set()  # modules that import each other are carried once, in any order

    def visit(name: str) -> None:
        if name in ordered or name in visiting:
            return
        visiting.add(name)
        for imported in sorted(set(fixport_imports(module_tree(name)[1]))):
            visit(imported)
        ordered.append(name)

    for name in modules:
        visit(name)
    return ordered


def _fix_function(index: int, mapping: FixMapping) -> str:
    """The template's source, wrapped so its module-level names stay its own.

    As in Fixport, the values set for the fix replace the template's default ``params`` after
    its source runs; a template in the old form, which reads ``params`` without defining it,
    gets them before.
    """
    source = re.sub(r"^from __future__ import .*$", "", mapping.source.rstrip(), flags=re.M)
    old_form = PARAMS_NAME in injected_names_used(source)
    lines = [f"{PARAMS_NAME} = chosen_params  # the template reads params without defining it"] if old_form else []
    lines.append(source)
    if old_form or defines_params(source):
        lines.append(f"{PARAMS_NAME} = {{**{PARAMS_NAME}, **chosen_params}}  # the values set replace the defaults")
    lines.append("return symbolic")
    body = textwrap.indent("\n\n".join(lines), "    ")
    return (f"\n\n# ---- fix {index}: {mapping.label} -> {mapping.template_id}"
            f"{' (edited)' if mapping.edited else ''} ----\n"
            f"def make_fix_{index}(chosen_params):\n{body}\n\n\n"
            f"fix_{index} = make_fix_{index}({python_literal(mapping.params)})\n")


def _fix_table(mappings: list[FixMapping], profile: ExporterProfile) -> str:
    """FIXES: each fix and what it is for, which the exporter's part registers (from each fix's own
    metadata: the sources are not read again)."""
    def registered(mapping: FixMapping) -> str:
        return profile.registered_kind(mapping.family, mapping.target_kind, mapping.replaced_kind)

    rows = "".join(
        f"    ScriptFix(fix_{index}, {python_literal(registered(m))}, instance={python_literal(m.instance)}, "
        f"python_op_name={python_literal(m.python_op_name)}, family={python_literal(m.family)}"
        f"{', complex_inputs=True' if m.meta is not None and m.meta.complex_inputs else ''}),\n"
        for index, m in enumerate(mappings, 1))
    return f"\n\nFIXES = [\n{rows}]\n" if rows else "\n\nFIXES = []  # the model exports without fixes\n"


def _last_lines() -> str:
    settings = ", ".join(f"{name}={name.upper()}" for name in SETTINGS_FIELDS)
    return (f"SETTINGS = ScriptSettings({settings})\n\n\n"
            f'if __name__ == "__main__":\n    main({EXPORT_FUNCTION}, SETTINGS, FIXES)\n')


def _carried_code(part_module: str) -> str:
    """The support package and the exporter's part, whole, and the script's imports of their API."""
    part = exporter_part_source(part_module)
    if not any(isinstance(node, ast.FunctionDef) and node.name == EXPORT_FUNCTION for node in ast.parse(part).body):
        raise LookupError(f"{part_module} defines no {EXPORT_FUNCTION}(job)")
    modules = [*support_sources(), (EXPORTER_PART, part)]
    return (EMBEDDED_MODULES_LOADER + "".join(embedded_module(name, source) for name, source in modules)
            + f"\n\nfrom {SCRIPT_SUPPORT}.script import {', '.join(SCRIPT_API)}  # noqa: E402\n"
            + f"from {EXPORTER_PART} import {EXPORT_FUNCTION}  # noqa: E402\n")


def fix_script_text(project: Project, script_path: str | Path, output_onnx: str, opset: int | None = None) -> str:
    """The script's text; ``opset`` is the resolved one when the project does not set it."""
    script_path = Path(script_path).resolve()
    profile = script_profile(project)
    sections = [_settings(project, script_path, output_onnx, opset), _carried_code(profile.fix_script_part),
                carried_modules(project.mappings)]
    sections += [_fix_function(i, m) for i, m in enumerate(project.mappings, 1)]
    sections += [_fix_table(project.mappings, profile), deployment_section(project.optimizer_fixes),
                 "\n\n" + _last_lines()]
    old_form_names = set().union(*(injected_names_used(m.source) for m in project.mappings))
    imports = [*SETTINGS_IMPORTS, *(Import(name) for name in LOADER_IMPORTS),
               *module_imports(ast.parse(import_block(old_form_names - {"torch"})))]
    return _header(project, script_path, profile) + import_lines(imports) + "".join(sections)


def write_fix_script(project: Project, script_path: str | Path, output_onnx: str, opset: int | None = None) -> Path:
    """Write the fix script for ``project`` (any exporter) to ``script_path``, executable."""
    script_path = Path(script_path)
    atomic_write_text(script_path, fix_script_text(project, script_path, output_onnx, opset))
    script_path.chmod(0o755)
    return script_path
