"""Loaded models kept warm in the worker: re-exports of the same model skip loading."""
from __future__ import annotations

from collections.abc import Callable

from fixport.core.loaders.loading import LoadedModel, load_model
from fixport.core.records.results import ModelRequest

_model_cache: dict[tuple, LoadedModel] = {}
MODEL_CACHE_SIZE = 4
_process_state: list[Callable[[], object]] = []


def watch_process_state(fingerprint: Callable[[], object]) -> None:
    """Tell the cache how to see the exporters' process-global state (the worker restores it after
    every job): a model whose loading changed it is loaded again for every job instead of kept."""
    _process_state[:] = [fingerprint]


def open_model(request: ModelRequest) -> LoadedModel:
    """Load through a small cache: re-exports of the same model skip loading, unless loading it
    changed the exporters' state (a model file calling ``register_custom_op_symbolic``: the worker
    drops that after the job, so the next job must run the file again)."""
    key = request.cache_key()
    if key in _model_cache:
        return _model_cache[key]
    before = [fingerprint() for fingerprint in _process_state]
    loaded = load_model(request.path, request.inputs, trust=request.trust, search_paths=request.search_paths,
                        task=request.task, component=request.component, dtype=request.dtype)
    if before == [fingerprint() for fingerprint in _process_state]:
        if len(_model_cache) >= MODEL_CACHE_SIZE:
            _model_cache.pop(next(iter(_model_cache)))
        _model_cache[key] = loaded
    return loaded
