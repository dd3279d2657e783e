"""The command line's main() run in-process on a lent warm worker: what the `cli` fixture and tools rely on."""
from __future__ import annotations

import signal

from fixport.cli.workers import command_worker, lending_worker

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
