"""The fix script's support: the only Fixport code a standalone fix script carries.

The fix-script writer (``fixport.core.fixing.fix_script``) writes every module of this package
into the script whole, as its source, with the part of the script the exporter's profile names
(``fix_script_part``, e.g. ``core/exporters/dynamo/script_part.py``). The script calls only the
public names of :mod:`.script` (``main``, ``ScriptSettings``, ``ScriptFix``, ``carry_module``),
and the exporter's part only the public names of this package.

So these modules import nothing of Fixport but each other (relative imports: in a script the
package is ``fix_script_support``), and only torch, onnx, onnxruntime, numpy and ml_dtypes (and
transformers for a checkpoint folder). Where they repeat what the engine does (random inputs,
input structure, checkpoint folders, the comparison rules), tests/test_fix_script_support.py runs
both on the same models and inputs. Nothing here is imported by the command line or the window:
the writer reads these files as text.
"""
