"""The suite's own settings: no verdict may depend on the machine's speed."""

from __future__ import annotations

import pytest
from hypothesis import settings


@pytest.mark.parametrize("profile", ["deterministic", "explore"])
def test_hypothesis_has_no_deadline(profile):
    # hypothesis's default (200 ms an example) failed a correct test on a busy machine
    assert settings.get_profile(profile).deadline is None


def test_the_loaded_profile_has_no_deadline():
    assert settings().deadline is None
