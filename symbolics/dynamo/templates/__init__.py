"""Built-in dynamo templates: one file each, read by :mod:`fixport.symbolics.dynamo.library`."""
