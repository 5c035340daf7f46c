"""``entmax.root_finding``: ours, re-exported unchanged."""

from sk_entmax.entmax.root_finding import *  # noqa: F403
from sk_entmax.entmax.root_finding import __all__  # noqa: F401
