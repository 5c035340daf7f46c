"""Test-session settings.

The tests train many tiny models. On a machine with 2 cores, PyTorch's default of one
intra-op thread per core makes every tiny operation pay for thread hand-offs, and when
another process (a GridSearchCV worker, say) shares the cores the spinning threads slow
training steps down by an order of magnitude. One thread keeps the suite fast and its
timings stable; no test depends on the thread count.

The hypothesis property tests draw the same examples on every run (profile
``"deterministic"``), so that a CI run cannot fail on an example no earlier run met; set
``HYPOTHESIS_PROFILE=explore`` to draw new examples each run and look for new failures.
"""

import os

import torch
from hypothesis import settings

torch.set_num_threads(1)

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
