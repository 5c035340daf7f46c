"""The one test of the device that the core's solvers make (:func:`cpu_branch`), and the
override that runs the other devices' branches on CPU tensors in the tests
(:func:`device_branch`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

# The device type whose branch the helpers below take instead of the tensor's own: None in
# normal use; a test sets it (:func:`device_branch`) to run the CUDA branches on CPU tensors.
_FORCED_BRANCH: str | None = None


def cpu_branch(T: torch.Tensor) -> bool:
    """Whether the helpers take their CPU branch for ``T``: the one test of the device that
    the core's solvers make (on CPU they sum and test with the exact, padding-proof forms;
    elsewhere with :func:`~sk_entmax.entmax.solvers._sums.row_sum`'s tree and no early stop).

    :func:`device_branch` overrides it, so that every other device's branch runs (and is
    tested, gradients too) on CPU tensors, without a GPU.
    """
    if _FORCED_BRANCH is None:
        return T.device.type == "cpu"
    return _FORCED_BRANCH == "cpu"


@contextmanager
def device_branch(device_type: str) -> Iterator[None]:
    """Within the block, :func:`cpu_branch` answers as for a tensor on ``device_type``
    (``"cuda"``: the GPU branches run on CPU tensors). Not thread-safe: for tests."""
    global _FORCED_BRANCH
    previous, _FORCED_BRANCH = _FORCED_BRANCH, torch.device(device_type).type
    try:
        yield
    finally:
        _FORCED_BRANCH = previous
