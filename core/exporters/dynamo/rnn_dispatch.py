"""Each capture dispatches the RNN ops afresh, as in a new process.

torch.onnx captures an LSTM or GRU under dynamic shapes with a ``while_loop`` decomposition, which
it registers for the capture only by writing the op's ``py_kernels``
(``torch.export._patches.register_lstm_while_loop_decomposition``). That write leaves the op's
dispatch cache as it was, so where the op was dispatched earlier in the process (a draft_export
after a capture failure, a plain torch.export, the previous job in the worker) the cached kernel
wins: the default decomposition, which unrolls the recurrence over the traced length. The ONNX
file then holds that length only, and an export that passes in a fresh process fails at other
sizes in a warm one. Forgetting the cached dispatch before and after each capture lets the
registration take effect.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

RNN_OPS = ("lstm", "gru", "rnn_tanh", "rnn_relu")


def forget_rnn_dispatch() -> None:
    """Clear the dispatch cache of every overload of the recurrent ops."""
    for name in RNN_OPS:
        packet = getattr(torch.ops.aten, name, None)
        for overload in packet.overloads() if packet is not None else ():
            cache = getattr(getattr(packet, overload), "_dispatch_cache", None)
            if cache is not None:
                cache.clear()


@contextmanager
def rnn_dispatch_afresh() -> Iterator[None]:
    """Around a capture: the RNN ops dispatch as registered now, and leave nothing cached after."""
    forget_rnn_dispatch()
    try:
        yield
    finally:
        forget_rnn_dispatch()
