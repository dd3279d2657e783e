"""Applying fixes: a project's mappings -> symbolics registered with the exporter for one export,
and the contexts the model is traced in (a fix that keeps a traced value an input)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from fixport.core.exporters.fix_registry import FixRegistry
from fixport.core.project.project import FixMapping
from fixport.core.words.errors import TemplateValidationError
from fixport.core.words.vocabulary import TRACED_VALUE_FAMILY


def traced_in(mapping: FixMapping) -> bool:
    """Whether the fix is a context the model is traced in, not a symbolic (its template's family)."""
    return mapping.family == TRACED_VALUE_FAMILY


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

    mappings = [m for m in mappings if not traced_in(m)]  # a context to trace in is no symbolic to check
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
    symbolics = registry.not_of_family(TRACED_VALUE_FAMILY)
    specs = mapping_specs(symbolics)
    validate_mappings(symbolics, opset, specs)
    try:
        with ExitStack() as stack:
            for mapping in contexts:
                stack.enter_context(registry.compiled(mapping)())
            yield stack.enter_context(registered_mappings(specs, opset, current_instance_key))
    except TemplateError as error:
        raise TemplateValidationError(str(error), "Fix the template source.", line=error.line) from error
