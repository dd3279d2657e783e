"""`sweep`: check, fix and compare many models with each exporter, resumable, in parallel (no Qt, no torch)."""
