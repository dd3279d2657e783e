"""Checkpoint folders saved the way transformers saves an export (``ExportedModel`` layout)."""
