"""The shim is a package named ``entmax``: it is only ever imported by the peer suite's own
subprocess (``test_peer_suites.py``), never collected here, where it would shadow the
reference package that other tests compare against."""

collect_ignore = ["shim"]
