"""Sphinx helpers of the sk_entmax documentation (not part of the package)."""

from __future__ import annotations

import json
from pathlib import Path

_FIGURES: dict[str, list[bool]] = {}


def check_figures(block, block_vars, gallery_conf):
    """Image scraper that records the figures each example draws.

    It runs before sphinx-gallery's matplotlib scraper, which saves and closes the figures
    open after a code block, so each figure is seen once. For every figure it notes whether
    each of its axes (colorbars aside) holds data, and writes the record of all examples
    run so far to ``<gallery>/figures.json``, which ``tests/test_docs.py`` reads.
    """
    import matplotlib.pyplot as plt

    seen = _FIGURES.setdefault(Path(block_vars["src_file"]).name, [])
    for number in plt.get_fignums():
        figure = plt.figure(number)
        axes = [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]
        seen.append(bool(axes) and all(ax.has_data() for ax in axes))
    record = Path(block_vars["target_file"]).parent / "figures.json"
    record.write_text(json.dumps(_FIGURES, indent=1, sort_keys=True))
    return ""
