"""One hypothesis profile for the whole suite: no per-example deadline.

Hypothesis fails an example slower than 200 ms by default; on a loaded machine a sound
example can take longer, and a test that fails by the clock is flaky, not a finding. Speed
is measured in ``bench/``, never asserted here.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("nerve", deadline=None)
settings.load_profile("nerve")
