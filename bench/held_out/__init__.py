"""Model files from outside the corpus for bench/held_out_sweep.py: tiny configs, random weights.

Each defines ``build()`` -> (model, example inputs) and, where the model takes other valid inputs
that the export must also get right, ``other_inputs()``.
"""
