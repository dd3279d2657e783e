"""Jobs over one model and any exporter: the analyze job (export, diagnose, check, save), dims worth
declaring, and op facts for the Inspector."""
