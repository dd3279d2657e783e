"""The engine's checkpoint work: a checkpoint folder's export saved the way transformers saves one
(``ExportedModel`` layout, ``checkpoint_export``) and its generation checked through the exported
prefill and decode components (``generation_check``). Opening a folder, its task and its example
inputs live in ``core/foundation/checkpoints/``, because every fix script carries them; this package
holds what needs more of Fixport (records, the exporters' results) than a fix script may carry."""
