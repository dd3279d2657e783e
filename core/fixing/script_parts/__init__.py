"""The fix script's code as ordinary modules: what every exporter's script shares (``common``) and
one part per exporter (named by its profile's ``fix_script_part``). The script carries their
source, read as text by ``fixport.core.fixing.fix_script``; tests import them."""
