"""Limits that issue 58 chose to document rather than remove (points 13, 15 and 16): each
is stated where a user meets it, so that a later edit cannot drop the warning silently."""

from __future__ import annotations

from pathlib import Path

from sk_entmax.scale_out import fit_blocks

DOC = Path(__file__).resolve().parents[1] / "doc" / "user_guide"


def _text(name: str) -> str:
    return " ".join((DOC / name).read_text(encoding="utf-8").split())


def test_fit_blocks_says_tabnet_learns_its_encoding_from_the_first_block():
    """Point 13: a category first seen in a later block is read as unknown."""
    doc = " ".join(fit_blocks.__doc__.split())
    assert "from the first block it trains on" in doc
    assert "first seen in a later block is read as unknown" in doc


def test_the_torchrun_guide_binds_loopback_and_says_the_store_listens_everywhere():
    """Point 15: the example command connects through loopback, and the guide says the
    unauthenticated store still listens on every interface and what to do about it."""
    text = _text("scale_out.md")
    assert "--master_addr 127.0.0.1 --master_port" in text
    assert "no authentication" in text and "listens on every interface" in text
    assert "firewall" in text


def test_the_export_guide_states_where_onnx_zeros_may_differ():
    """Point 16: exact zeros match at alpha 1.5 and 2; at root-finding alphas a few rows may
    hold a probability below 1e-20 where the graph has 0."""
    text = _text("export.md")
    assert "At the other alphas (root finding" in text and "1e-20" in text
    assert "use alpha 1.5 or sparsemax (alpha 2)" in text
