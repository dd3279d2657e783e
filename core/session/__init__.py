"""The session: what one open model or project holds between jobs, without Qt or torch.

The window is a view over it (its docks subscribe to its events); tests drive the same workflows
headless through :class:`~fixport.core.session.jobs.QueuedJobs`.
"""
