"""What the user saves: the project, its export options, inputs, shapes and tolerances, and files."""
