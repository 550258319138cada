"""How the gate's generated tests draw their members (imported by conftest.py, once)."""

from __future__ import annotations

import os

from hypothesis import settings as hypothesis_settings

# The gate's generated tests draw the same members every run (derandomize): the family is "a
# test whose verdict depends on the day's draw" -- a statistical rule with a measured false-alarm
# rate, tested as if it had none, failed one gate in twenty. A rule's rate is asserted as a rate
# (tests/analyse/test_shape.py); fresh draws are for exploring, by hand:
# HYPOTHESIS_PROFILE=explore bash scripts/test.sh (random seeds, 1,000 examples a test).
hypothesis_settings.register_profile("gate", derandomize=True, print_blob=True)
hypothesis_settings.register_profile("explore", derandomize=False, max_examples=1000)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))
