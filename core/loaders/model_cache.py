"""Loaded models kept warm in the worker: re-exports of the same model skip loading."""
from __future__ import annotations

from fixport.core.loaders.loading import LoadedModel, load_model
from fixport.core.model.results import ModelRequest

_model_cache: dict[tuple, LoadedModel] = {}
MODEL_CACHE_SIZE = 4


def open_model(request: ModelRequest) -> LoadedModel:
    """Load through a small cache: re-exports of the same model skip loading."""
    key = request.cache_key()
    if key not in _model_cache:
        if len(_model_cache) >= MODEL_CACHE_SIZE:
            _model_cache.pop(next(iter(_model_cache)))
        _model_cache[key] = load_model(request.path, request.inputs, trust=request.trust,
                                       search_paths=request.search_paths, task=request.task,
                                       component=request.component)
    return _model_cache[key]
