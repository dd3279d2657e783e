"""torch.export as a tool, shared by both exporters: the dynamo exporter translates what it
captures; the TorchScript exporter uses it to check a custom op's rewritten implementation."""
