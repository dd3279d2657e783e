"""The TorchScript exporter (``torch.onnx.export(dynamo=False)``): its Exporter class
(``exporter``), source-graph loader, per-node capture and samples, fix registration, fix candidates,
reference kernels, process state (the symbolic registry) and the torch internals it touches."""
