"""Applying fixes: a project's mappings -> symbolics registered with the exporter for one export."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fixport.core.model.errors import TemplateValidationError
from fixport.core.model.project import FixMapping
from fixport.symbolics.library import TemplateLibrary


def mapping_specs(mappings: list[FixMapping], library: TemplateLibrary | None = None):
    """Registration specs (symbolic_registration.MappingSpec) for project mappings."""
    from fixport.core.exporters.torchscript.symbolic_registration import MappingSpec

    library = library or TemplateLibrary()
    specs = []
    for mapping in mappings:
        template = library.get(mapping.template_id) if mapping.template_id in library else None
        specs.append(MappingSpec(
            target_kind=mapping.target_kind, instance=mapping.instance, template_id=mapping.template_id,
            source=mapping.source, params=dict(mapping.params), python_op_name=mapping.python_op_name,
            custom_opsets=mapping.domain_opsets(),
            min_opset=template.min_opset if template and not mapping.edited else 1,
            max_opset=template.max_opset if template and not mapping.edited else None))
    return specs


def validate_mappings(mappings: list[FixMapping], opset: int, specs: list | None = None) -> None:
    """Raise TemplateValidationError for the first mapping that cannot work at ``opset``."""
    from fixport.core.exporters.torchscript.symbolic_registration import validate_mapping

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

    specs = mapping_specs(mappings)
    validate_mappings(mappings, opset, specs)
    try:
        with registered_mappings(specs, opset, current_instance_key) as custom_opsets:
            yield custom_opsets
    except TemplateError as error:
        raise TemplateValidationError(str(error), "Fix the template source.", line=error.line) from error
