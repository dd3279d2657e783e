"""The command line's main() run in-process on a lent warm worker: what the `cli` fixture and tools rely on."""
from __future__ import annotations

import signal

from fixport.cli.workers import (
    FRESH_WORKER_PER_COMPONENT_ABOVE_BYTES,
    command_worker,
    fresh_for_next_component,
    lending_worker,
)

CLEAN_MODEL = """
    import torch

    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (torch.randn(2, 4),)
"""


def test_a_command_runs_on_the_lent_worker_and_leaves_it_as_it_was(cli, worker, model_file) -> None:
    worker.start()
    pid, timeout_s, sigterm = worker.pid, worker.job_timeout_s, signal.getsignal(signal.SIGTERM)
    checked = cli("check", str(model_file("clean.py", CLEAN_MODEL)), "--timeout", "77")
    assert checked.returncode == 0, checked.stderr
    assert "OK" in checked.stdout
    assert worker.alive and worker.pid == pid  # the job ran there, and the worker was not stopped
    assert worker.job_timeout_s == timeout_s  # the command's --timeout held for its job only
    assert signal.getsignal(signal.SIGTERM) == sigterm  # main()'s SIGTERM handler is gone again


def test_a_command_without_a_lent_worker_gets_its_own_and_stops_it(worker) -> None:
    with command_worker(12) as own:
        assert own is not worker and own.job_timeout_s == 12
        own.start()
        assert own.alive
    assert not own.alive
    with lending_worker(worker), command_worker(12) as lent:
        assert lent is worker and lent.job_timeout_s == 12
    with command_worker(12) as after:
        assert after is not worker  # the lending ended with its block


def _folder_with_weights(folder, size: int):  # type: ignore[no-untyped-def]
    folder.mkdir()
    with open(folder / "model.safetensors", "wb") as weights:
        weights.truncate(size)  # sparse: its size counts, no disk is used
    return folder


def test_a_big_checkpoints_next_component_starts_in_a_fresh_worker_of_the_commands_own(worker, tmp_path) -> None:
    big = _folder_with_weights(tmp_path / "big", FRESH_WORKER_PER_COMPONENT_ABOVE_BYTES)
    small = _folder_with_weights(tmp_path / "small", 1024)
    with command_worker(12) as own:
        own.start()
        fresh_for_next_component(own, small)
        assert own.alive  # a small one's components share the warm worker
        fresh_for_next_component(own, big)
        assert not own.alive  # the next job starts a fresh process
    worker.start()
    with lending_worker(worker), command_worker(12) as lent:
        fresh_for_next_component(lent, big)
        assert lent.alive  # the caller's worker is the caller's
