"""Test-session settings.

The suite runs at torch's default thread settings, as users do: nothing here sets the number
of threads (forcing one thread once hid a defect that only showed with several).

The hypothesis property tests draw the same examples on every run (profile
``"deterministic"``), so that a CI run cannot fail on an example no earlier run met; set
``HYPOTHESIS_PROFILE=explore`` to draw new examples each run and look for new failures.
Neither profile has a deadline: a verdict must not depend on the machine's speed, and
hypothesis's default of 200 ms per example failed a correct test on a busy machine.
"""

import os

from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
