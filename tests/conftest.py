"""Test-session settings.

The tests train many tiny models. On a machine with 2 cores, PyTorch's default of one
intra-op thread per core makes every tiny operation pay for thread hand-offs, and when
another process (a GridSearchCV worker, say) shares the cores the spinning threads slow
training steps down by an order of magnitude. One thread keeps the suite fast and its
timings stable; no test depends on the thread count.
"""

import torch

torch.set_num_threads(1)
