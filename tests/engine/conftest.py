"""Fixtures of the data-parallel tests."""

from __future__ import annotations

import pytest
import torch.distributed as dist
from loopback import free_port


@pytest.fixture
def group_of_one():
    """A gloo process group of one process over loopback, for the test's duration."""
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()
