"""What crosses the worker: one request per job, what it returns, and the records those hold."""
