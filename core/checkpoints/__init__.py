"""The engine's checkpoint work: a checkpoint folder's export saved the way transformers saves one
(``ExportedModel`` layout, ``checkpoint_export``) and its generation checked through the exported
prefill and decode components (``generation_check``). Opening a folder, its task and its example
inputs are the foundation's (``core/foundation/checkpoint*.py``), which every fix script carries."""
