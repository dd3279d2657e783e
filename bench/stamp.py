"""The stamp every generated table carries; it lives with the sweep, which stamps its reports the same way."""
from fixport.core.sweep.stamp import machine_stamp, stamp_markdown

__all__ = ["machine_stamp", "stamp_markdown"]
