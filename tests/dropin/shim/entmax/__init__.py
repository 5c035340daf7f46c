"""A package named ``entmax`` that is ``sk_entmax.entmax``: what a user gets by swapping the
import, laid out as the reference ``entmax`` 1.3 is, so that the reference's own test files
run unchanged against our core (``tests/dropin/test_peer_suites.py``)."""

from sk_entmax.entmax import *  # noqa: F403
from sk_entmax.entmax import __all__, __version__  # noqa: F401

SHIM = True  # the peer-suite runner checks that this package, not the reference, was imported
