"""Checks of an export that hold for any exporter: outputs against torch, declared dims at other
sizes, inputs the export does not follow, low precision (generation is checked in ``core/checkpoints/``)."""
