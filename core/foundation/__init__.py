"""The foundation: the code the engine stands on and the only Fixport code a fix script carries.

The fix-script writer (``fixport.core.fixing.fix_script``) writes every module of this package
(its ``checkpoints`` sub-package too) into the script whole, as its source, with the part of the
script the exporter's profile names (``fix_script_part``, e.g. ``core/exporters/dynamo/script_part.py``).
The script calls only the public names of :mod:`.script` (``main``, ``ScriptSettings``,
``ScriptFix``, ``carry_module``), and the exporter's part only the public names of this package.

So these modules import nothing of Fixport but each other (relative imports: in a script the
package is ``fix_script_support``), and only torch, onnx, onnxruntime, numpy and ml_dtypes (and
transformers for a checkpoint folder). They are also the engine's code for what the script does as
Fixport does (random inputs, input structure and input sets, the comparison rules, the other
sizes, bfloat16 runs, opening a checkpoint folder, the errors a user is shown): the engine imports
them from here, and from nowhere else (no engine module re-exports them), so both run one
implementation. ``comparison``, ``dynamic_dims``, ``session_feeds``, ``bfloat16``, ``errors`` and
``checkpoints.tasks`` import no torch, so the torch-free rooms may use them too.
"""
