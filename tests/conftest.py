"""Shared pytest settings: hypothesis profiles (the default one is deterministic)."""
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")

import os

# The on-disk PLD cache (tsdp.verify.pld_cache) is off for the suite: tests that patch the
# numerics would otherwise read PLDs of another test; its own tests switch it on in a tmp folder.
os.environ["TSDP_CACHE_DIR"] = "off"
