"""Checkpoint folders (a transformers ``config.json`` and weights), as the engine and every fix script
open them: ``tasks`` (the task a config asks for, its Auto class; torch-free), ``inputs`` (example
inputs from the forward signature and the config), ``plain`` (the model's forward as one graph) and
``folder`` (opening a folder: its task, component and dtype). They live in the foundation because a
fix script carries them; the engine's checkpoint work that needs more of Fixport (saving a folder's
export, checking generation) is ``core/checkpoints/``, which imports them from here."""
