"""The dynamo exporter (``torch.onnx.export(dynamo=True)``): its Exporter class (``exporter``),
FX source-graph loader, per-node capture and samples, fixes as a translation table, fix candidates,
capture settings and code changes, and the torch internals it touches."""
