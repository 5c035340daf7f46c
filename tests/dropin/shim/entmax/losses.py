"""``entmax.losses``: ours, re-exported unchanged."""

from sk_entmax.entmax.losses import *  # noqa: F403
from sk_entmax.entmax.losses import __all__  # noqa: F401
