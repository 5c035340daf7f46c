"""The documented public modules: the API reference must list every name of their
``__all__`` (``test_docs.py``), and numpydoc's validation runs over each of them
(``test_docstrings.py``)."""

PUBLIC_MODULES = [
    "sk_entmax",
    "sk_entmax.entmax",
    "sk_entmax.nn",
    "sk_entmax.metrics",
    "sk_entmax.report",
    "sk_entmax.persistence",
    "sk_entmax.conformal",
    "sk_entmax.export",
    "sk_entmax.scale_out",
]
