"""torch's weights re-pointed at the file an export wrote them to (issue 20).

Once a big model's weights are on disk, the model's own copy in anonymous memory is a second one:
ONNX Runtime maps the file, and torch holds the same bytes. Mapping torch's tensors from that file
too leaves one copy, in the page cache: pages are shared by both mappings, and a mapping holds only
the pages it touched (torch's, none while ONNX Runtime runs)."""
from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch

from fixport.core.onnx_io.shared_weights import register_mapped_file

# Kernels may load a weight with aligned vector instructions: a tensor is mapped only where its
# bytes start at this alignment (the file's big tensors start on 64 KB boundaries).
MAPPED_ALIGNMENT = 64
# A weight the optimizer wrote transposed becomes a transposed view of the file: torch's CPU matmul
# takes such views as they are in these dtypes, but float16's copies or walks them on every call
# (a float16 ViT-B ran 11x slower); other dtypes keep torch's own copy where written transposed.
TRANSPOSED_VIEWS_RUN_AS_FAST = frozenset({torch.float32, torch.float64, torch.bfloat16})


def external_locations(model: onnx.ModelProto, base_dir: Path) -> dict[str, tuple[Path, int, int]]:
    """Each external initializer's file, offset and length."""
    places: dict[str, tuple[Path, int, int]] = {}
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {entry.key: entry.value for entry in tensor.external_data}
        if "location" in entries and "length" in entries:
            places[tensor.name] = (base_dir / entries["location"], int(entries.get("offset", 0)),
                                   int(entries["length"]))
    return places


@dataclass(frozen=True)
class WeightSource:
    """The torch tensor an initializer's bytes were written from: the tensor itself, or the tensor
    permuted by ``perm`` (a Transpose of it that the optimizer folded into a new initializer)."""

    tensor: torch.Tensor
    perm: tuple[int, ...] | None = None

    def written(self) -> torch.Tensor:
        """The tensor as its bytes were written (a strided view where transposed)."""
        return self.tensor if self.perm is None else self.tensor.permute(self.perm)

    def restored(self, written: torch.Tensor) -> torch.Tensor:
        """The tensor's own layout over ``written`` (the bytes, shaped as written)."""
        if self.perm is None:
            return written
        return written.permute([self.perm.index(axis) for axis in range(len(self.perm))])


def weight_sources(graph: Any) -> dict[str, WeightSource]:
    """Before optimization, in an ONNX IR graph: each initializer held as a torch tensor, and each
    Transpose output of one (the optimizer folds those into initializers of the output's name)."""
    sources = {name: WeightSource(value.const_value.raw) for name, value in graph.initializers.items()
               if isinstance(getattr(value.const_value, "raw", None), torch.Tensor)}
    for node in graph:
        if node.op_type != "Transpose" or not node.inputs or node.inputs[0] is None:
            continue
        source = sources.get(node.inputs[0].name)
        if source is None or source.perm is not None or not node.inputs[0].is_initializer():
            continue
        perm = node.attributes.get("perm")
        rank = source.tensor.dim()
        order = tuple(perm.value) if perm is not None else tuple(reversed(range(rank)))
        sources.setdefault(node.outputs[0].name, WeightSource(source.tensor, order))
    return sources


def map_from_file(sources: Mapping[str, WeightSource], model: onnx.ModelProto, base_dir: Path) -> int:
    """Point each torch tensor of ``sources`` (initializer name -> the tensor written for it) at its
    bytes in ``model``'s external data, copy-on-write; its old memory goes when nothing else holds
    it. Tensors inline, not dense, unaligned or whose bytes differ stay as they are, and so do
    tensors written transposed in a dtype whose matmul is slow on transposed views; a tensor written
    both as itself and transposed is mapped from itself.

    Returns the bytes now mapped."""
    files: dict[Path, torch.Tensor] = {}
    versions: dict[Path, dict[int, tuple[weakref.ref[torch.Tensor], int]]] = {}
    mapped: set[int] = set()
    mapped_bytes = 0
    places = external_locations(model, base_dir)
    ordered = sorted(places, key=lambda name: sources[name].perm is not None if name in sources else True)
    with torch.no_grad():
        for name in ordered:
            source, (path, offset, length) = sources.get(name), places[name]
            if source is None or id(source.tensor) in mapped or not _mappable(source.tensor, offset, length):
                continue
            if source.perm is not None and source.tensor.dtype not in TRANSPOSED_VIEWS_RUN_AS_FAST:
                continue
            if path not in files:
                mapping = np.memmap(path, dtype=np.uint8, mode="c")
                versions[path] = {}
                # ONNX Runtime's sessions over the file read it from here
                register_mapped_file(path, mapping, partial(_as_written, versions[path]))
                files[path] = torch.from_numpy(mapping)
            if offset + length > files[path].numel():
                continue
            expected = source.written()
            written = files[path][offset:offset + length].view(source.tensor.dtype).view(expected.shape)
            if not _same_ends(written, expected):
                continue
            source.tensor.data = source.restored(written)
            versions[path][offset] = (weakref.ref(source.tensor), source.tensor._version)
            mapped.add(id(source.tensor))
            mapped_bytes += length
    return mapped_bytes


def _as_written(versions: dict[int, tuple[weakref.ref[torch.Tensor], int]], offset: int) -> bool:
    """Whether the bytes at ``offset`` are still the file's: no tensor mapped there was changed in
    place since (copy-on-write keeps the file as it was, but the mapping then holds torch's values)."""
    tensor, version = versions.get(offset, (None, 0))
    alive = tensor() if tensor is not None else None
    return alive is None or alive._version == version


def _mappable(tensor: torch.Tensor, offset: int, length: int) -> bool:
    return (tensor.device.type == "cpu" and _dense(tensor) and tensor.dim() > 0 and length > 0
            and tensor.numel() * tensor.element_size() == length and offset % MAPPED_ALIGNMENT == 0
            and not tensor.is_quantized and tensor.layout == torch.strided)


def _dense(tensor: torch.Tensor) -> bool:
    """Each element once, no gaps, in any order of dimensions: contiguous, or a transposed view of a
    file an earlier export mapped it from (a later export maps it again, and the earlier file goes).
    Expanded views and column slices are not: their elements are not laid out as the file holds them."""
    expected = 1
    for stride, size in sorted((s, n) for s, n in zip(tensor.stride(), tensor.shape) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _same_ends(written: torch.Tensor, expected: torch.Tensor) -> bool:
    """The first and last rows of the file's bytes are the tensor's: a cheap check that reads two
    rows of the file (a full comparison would read it all back, and leave it all resident)."""
    return torch.equal(written[0], expected[0]) and torch.equal(written[-1], expected[-1])
