"""Weight files' clean pages leave the process while the other copy of the weights runs, and come back
when read; a mapping with a written page is left as it is (dropping it would lose the write)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from fixport.core.onnx_io.resident_weights import release_clean_weight_pages

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
MB = 1 << 20


def _resident(path: Path) -> int:
    """Bytes of ``path``'s mappings resident in this process."""
    resident, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split(maxsplit=5)
            if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                inside = len(head) == 6 and head[5].strip() == str(path)
            elif inside and head[0] == "Rss:":
                resident += int(head[1]) * 1024
    return resident


def _weights_file(tmp_path: Path, name: str) -> tuple[Path, np.ndarray]:
    values = np.random.default_rng(0).standard_normal(8 * MB // 4).astype(np.float32)
    path = tmp_path / name
    values.tofile(path)
    return path, values


def test_a_clean_mapping_leaves_the_process_and_reads_the_same_after(tmp_path: Path) -> None:
    path, values = _weights_file(tmp_path, "model.safetensors")
    mapped = np.memmap(path, dtype=np.float32, mode="c")
    assert float(mapped.sum()) == pytest.approx(float(values.sum()), rel=1e-5)  # every page read
    assert _resident(path) >= 7 * MB
    assert release_clean_weight_pages() >= 7 * MB
    assert _resident(path) < MB
    assert np.array_equal(mapped, values)  # read back, from the page cache
    assert _resident(path) >= 7 * MB


def test_a_mapping_with_a_written_page_keeps_its_pages_and_the_write(tmp_path: Path) -> None:
    path, values = _weights_file(tmp_path, "weights.data")
    mapped = np.memmap(path, dtype=np.float32, mode="c")  # copy-on-write, as torch maps an export's weights
    mapped[0] = 42.0
    assert float(mapped[1:].sum()) == pytest.approx(float(values[1:].sum()), rel=1e-5)
    release_clean_weight_pages()
    assert _resident(path) >= 7 * MB
    assert mapped[0] == 42.0 and np.array_equal(mapped[1:], values[1:])


def test_pages_are_handed_back_while_torch_converts_and_not_after(tmp_path: Path) -> None:
    import time

    from fixport.core.onnx_io.resident_weights import WeightPagesHandedBack

    path, values = _weights_file(tmp_path, "weights.data")
    mapped = np.memmap(path, dtype=np.float32, mode="c")
    pages = WeightPagesHandedBack(every_s=0.05)
    pages.start()
    float(mapped.sum())
    deadline = time.monotonic() + 10
    while _resident(path) >= MB and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _resident(path) < MB
    pages.stop()
    assert np.array_equal(mapped, values)
    time.sleep(0.2)
    assert _resident(path) >= 7 * MB  # stopped: what is read again stays


@pytest.mark.parametrize("big", [True, False])
def test_compare_hands_torchs_weight_pages_back_between_its_runs_for_a_big_model(tmp_path: Path, big: bool) -> None:
    import onnx
    import torch

    from fixport.core.comparison.compare_job import compare_run
    from fixport.core.onnx_io.ort_session import create_session
    from fixport.core.onnx_io.resident_weights import turn_taker
    from fixport.core.project.tolerances import ToleranceTable

    path, values = _weights_file(tmp_path, "weights.bin")
    mapped = np.memmap(path, dtype=np.float32, mode="c", shape=(len(values) // 512, 512))
    module = torch.nn.Linear(512, mapped.shape[0], bias=False)
    module.weight = torch.nn.Parameter(torch.from_numpy(mapped), requires_grad=False)  # torch reads the file's pages
    example = torch.randn(2, 512)
    model = tmp_path / "linear.onnx"
    torch.onnx.export(module, (example,), str(model), input_names=["x"], dynamo=False)
    session = create_session(onnx.load(str(model)), "cpu").session

    stats, _ = compare_run(module, session, ["x"], (example,), ToleranceTable(), 0, "cpu", turn_taker(big))

    failing = [(s.name, s.max_abs, s.mismatch_count, s.problem) for s in stats if not s.passed]
    assert failing == []
    assert (_resident(path) == 0) is big  # torch's pages wait in the page cache while ONNX Runtime runs
