"""A δ below the composed PLD's resolution is refused with the smallest δ the accountant answers; the δ the refusal
suggests must itself be answered (it is rounded up to its two printed digits, never down)."""
import math
import re

import pytest

from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.estimate import DeltaTooSmallError
from tsdp.verify.events import training_event


@pytest.mark.parametrize("steps", [1, 10])
def test_the_smallest_delta_a_refusal_suggests_is_answered(steps):
    """10 steps of the default configuration: the truncated mass is 1.0e-15 and the suggestion 1.01e-15 printed as
    '1e-15' was refused in turn."""
    acc = PldAccountant("sound", discretization=1e-3).compose(training_event(DEFAULT_CONFIG, steps=steps))
    with pytest.raises(DeltaTooSmallError) as err:
        acc.get_epsilon(1e-30)
    suggested = float(re.search(r"give δ >= (\S+)", str(err.value)).group(1))
    assert suggested >= err.value.smallest
    assert math.isfinite(acc.get_epsilon(suggested))
