"""The report's one accounting (:class:`tsdp.reports.report_accounting.ReportAccounting`): each question answered
as :func:`tsdp.verify.accounting.epsilon` answers it alone, the schedules of one composed run once, a refusal never
kept."""
import pytest

from tsdp.reports.report_accounting import ReportAccounting
from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.theorems.errors import TheoremError
from tsdp.verify import accounting
from tsdp.verify.pld import PldSettings


def test_an_answer_is_the_accountants_and_one_run_is_asked_once():
    answers = ReportAccounting()
    config = DEFAULT_CONFIG  # WOR: one epoch is compositions_per_epoch steps
    n = config.compositions_per_epoch
    epoch = answers.epsilon(config, 1e-5, epochs=1, settings=PldSettings(1e-3))
    alone = accounting.epsilon(config, 1e-5, epochs=1, discretization=1e-3)
    assert (epoch.epsilon, epoch.epsilon_attained, epoch.compositions) == (alone.epsilon, alone.epsilon_attained, n)
    assert answers.epsilon(config, 1e-5, steps=n, settings=PldSettings(1e-3)) is epoch  # the same run: one answer
    other_grid = answers.epsilon(config, 1e-5, steps=n, settings=PldSettings(1e-4))
    other_delta = answers.epsilon(config, 1e-3, steps=n, settings=PldSettings(1e-3))
    assert other_grid is not epoch and other_delta.epsilon < epoch.epsilon  # another question, its own answer
    deterministic = config.with_(top="deterministic")  # one step of it is charged its whole epoch
    assert answers.epsilon(deterministic, 1e-5, steps=1, settings=PldSettings(1e-3)) is answers.epsilon(
        deterministic, 1e-5, epochs=1, settings=PldSettings(1e-3))


def test_a_refusal_is_raised_each_time_it_is_asked():
    answers = ReportAccounting()
    for _ in range(2):  # T1 is a per-epoch bound of deterministic iteration; WOR has no such bound
        with pytest.raises(TheoremError):
            answers.epsilon(DEFAULT_CONFIG, 1e-5, steps=1, theorem="T1", settings=PldSettings(1e-3))
