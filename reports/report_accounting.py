"""The report's one accounting: every ε its sections ask of a configuration (section 1's rows and catalogue, the
tightness section's gaps, composition, shuffled rows and brackets) is one question to
:func:`tsdp.verify.accounting.epsilon`, answered once per report and passed down to each section.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from tsdp.theorems.config import TrainingConfig
from tsdp.verify import accounting
from tsdp.verify.accounting import AccountingResult
from tsdp.verify.events import training_event
from tsdp.verify.pld import PldSettings


class ReportAccounting:
    """ε of a run at δ, from :func:`tsdp.verify.accounting.epsilon` (sound: an **upper** bound rounded up; attained:
    a **lower** bound rounded down), each question answered once.

    A question is the composed run (:func:`tsdp.verify.events.training_event` of the configuration, its steps or
    epochs and the theorem named), δ and the grid: the schedules of one run (1 epoch and the steps it holds) share
    one answer, so a caller reads the run's numbers from it (compositions, ε), not the steps or epochs asked. A
    refusal (TheoremError, ConfigError) is raised each time it is asked, never kept.
    """

    def __init__(self) -> None:
        self._answers: Dict[Tuple[str, float, PldSettings], AccountingResult] = {}

    def epsilon(self, config: TrainingConfig, delta: float, *, steps: Optional[int] = None,
                epochs: Optional[int] = None, theorem: Optional[str] = None,
                settings: PldSettings = PldSettings()) -> AccountingResult:
        """:func:`tsdp.verify.accounting.epsilon` of the question, computed the first time it is asked.

        Args:
            config: The training configuration.
            delta: The target δ.
            steps: The training steps (give ``steps`` or ``epochs``).
            epochs: The epochs.
            theorem: The bound's T-id (None: the tightest sound upper bound for the scheme).
            settings: The accountant's grid and truncations.

        Returns:
            The accounting answer (sound and attained ε, the theorem, the compositions).

        Raises:
            TheoremError: The bound does not apply, or none does.
            ConfigError: A schedule the accountant refuses.
        """
        run = training_event(config, steps=steps, epochs=epochs, theorem=theorem)
        key = (repr(run), float(delta), settings)  # a composed run holds a list: its repr is the key
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = accounting.epsilon_with(config, delta, settings, steps=steps, epochs=epochs,
                                                                 theorem=theorem)
        return found
