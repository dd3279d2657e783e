"""Applying fixes: a project's mappings -> symbolics registered with the exporter for one export,
the contexts the model is traced in (a fix that keeps a traced value an input), and the methods its
parts run changed while traced (a fix that keeps a size traced)."""
from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from fixport.core.exporters.fix_registry import FixRegistry
from fixport.core.foundation.changed_methods import ChangedMethod, methods_changed
from fixport.core.loaders.loading import LoadedModel
from fixport.core.project.project import FixMapping
from fixport.core.words.errors import TemplateValidationError
from fixport.core.words.vocabulary import TRACED_CODE_CHANGE_FAMILY, TRACED_VALUE_FAMILY

# The methods the active code-change fixes change, set on the traced model by code_changes_applied
_CODE_CHANGES: contextvars.ContextVar[tuple[ChangedMethod, ...]] = contextvars.ContextVar(
    "fixport_torchscript_code_changes", default=())


def traced_in(mapping: FixMapping) -> bool:
    """Whether the fix is a context the model is traced in, not a symbolic (its template's family)."""
    return mapping.family == TRACED_VALUE_FAMILY


def changes_code(mapping: FixMapping) -> bool:
    """Whether the fix lists methods the model's parts run changed while traced, not a symbolic."""
    return mapping.family == TRACED_CODE_CHANGE_FAMILY


def _changed_methods(registry: FixRegistry, mapping: FixMapping) -> list[ChangedMethod]:
    try:
        changed = list(registry.compiled(mapping)())
        if not all(isinstance(row, tuple) and len(row) == 4 and callable(row[3]) for row in changed):
            raise TypeError("each entry must be (class name, file name, method name, function)")
    except Exception as error:  # noqa: BLE001 -- the fix's own code can raise anything
        raise TemplateValidationError(f"The fix for {mapping.label} ({mapping.template_id}) lists no changed "
                                      f"methods: {type(error).__name__}: {error}",
                                      "symbolic() must return [(class, file, method, function), ...].",
                                      target=mapping.label) from error
    return changed


@contextmanager
def code_changes_applied(loaded: LoadedModel) -> Iterator[None]:
    """The active code-change fixes' methods set on the model's parts while the block runs (the
    trace); a change for a method the model does not run is the fix's error."""
    changed = _CODE_CHANGES.get()
    if not changed:
        yield
        return
    with ExitStack() as stack:
        try:
            stack.enter_context(methods_changed(loaded.module, changed))
        except LookupError as error:
            raise TemplateValidationError(f"A code-change fix does not fit this model: {error}.",
                                          "Remove the fix and run fix --auto again.") from error
        yield


def mapping_specs(mappings: list[FixMapping]):
    """Registration specs (symbolic_registration.MappingSpec) for project mappings."""
    from fixport.core.exporters.torchscript.symbolic_registration import MappingSpec

    specs = []
    for mapping in mappings:
        min_opset, max_opset = _declared_opsets(mapping)
        specs.append(MappingSpec(
            target_kind=mapping.target_kind, instance=mapping.instance, template_id=mapping.template_id,
            source=mapping.source, params=dict(mapping.params), python_op_name=mapping.python_op_name,
            custom_opsets=mapping.domain_opsets(), min_opset=min_opset, max_opset=max_opset))
    return specs


def _declared_opsets(mapping: FixMapping) -> tuple[int, int | None]:
    """The opsets the fix's template declares, read from the saved fix itself (it keeps its
    template's metadata: no library is built per export); an edited fix, or one whose metadata
    cannot be read, is tried at any opset."""
    if mapping.edited or mapping.meta is None:
        return 1, None
    return mapping.meta.min_opset, mapping.meta.max_opset


def validate_mappings(mappings: list[FixMapping], opset: int, specs: list | None = None) -> None:
    """Raise TemplateValidationError for the first mapping that cannot work at ``opset``."""
    from fixport.core.exporters.torchscript.symbolic_registration import validate_mapping

    mappings = [m for m in mappings if not traced_in(m) and not changes_code(m)]  # no symbolic to check there
    for mapping, spec in zip(mappings, specs if specs is not None else mapping_specs(mappings)):
        problems = validate_mapping(spec, opset)
        if problems:
            first = problems[0]
            raise TemplateValidationError(
                f"The fix for {mapping.label} ({mapping.template_id}): {first.message}",
                "Edit the template source or pick another template.", line=first.line, target=mapping.label)


@contextmanager
def applied_mappings(mappings: list[FixMapping], opset: int) -> Iterator[dict[str, int]]:
    """Register the mappings for one export; yields the custom_opsets they need."""
    if not mappings:
        yield {}
        return
    from fixport.core.exporters.template_compiler import TemplateError
    from fixport.core.exporters.torchscript.conversion_hooks import current_instance_key
    from fixport.core.exporters.torchscript.symbolic_registration import registered_mappings

    registry = FixRegistry(mappings)
    contexts = registry.of_family(TRACED_VALUE_FAMILY)
    changed = tuple(row for m in registry.of_family(TRACED_CODE_CHANGE_FAMILY) for row in _changed_methods(registry, m))
    symbolics = registry.not_of_family(TRACED_VALUE_FAMILY, TRACED_CODE_CHANGE_FAMILY)
    specs = mapping_specs(symbolics)
    validate_mappings(symbolics, opset, specs)
    token = _CODE_CHANGES.set(changed)
    try:
        with ExitStack() as stack:
            for mapping in contexts:
                stack.enter_context(registry.compiled(mapping)())
            yield stack.enter_context(registered_mappings(specs, opset, current_instance_key))
    except TemplateError as error:
        raise TemplateValidationError(str(error), "Fix the template source.", line=error.line) from error
    finally:
        _CODE_CHANGES.reset(token)
