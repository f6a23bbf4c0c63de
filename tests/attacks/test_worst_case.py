"""The proofs' constructions through the real loop (attacks.montecarlo.constructions): window counts, gradient function, output law."""
import numpy as np
import pytest
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.errors import TheoremError
from tsdp.attacks.montecarlo.trials import sample_steps
from tsdp.training.samplers import make_sampler
from tsdp.training.step import per_sample_gradients
from tsdp.training.windows import gather_windows, split_window
from tsdp.attacks.montecarlo.constructions import build, pair_numeric, target_column
from tsdp.theorems.constructions import CONSTRUCTIONS as SCHEMES

from update_trials import goodness_of_fit, released_updates

BASE = TrainingConfig(N=32, batch_size=8, L=6, context_length=1, forecast_length=1, sigma=1.0)

# theorem -> configuration it is exercised on (λ > 1 for T3/T9, augmentation for T11)
CASES = {
    "T1": BASE,
    "T3": BASE.with_(instances=2),
    "T4": BASE,
    "T6": BASE,
    "T9": BASE.with_(instances=2),
    "T10": BASE,
    "T11": BASE.with_(sigma_context=0.5, sigma_forecast=2.0),
    "T13": BASE.with_(context_length=2, forecast_length=2),
    "T14": BASE.with_(context_length=2, forecast_length=2),
}


@pytest.mark.parametrize("lc,lf,length", [(1, 1, 6), (2, 3, 10), (3, 2, 4), (4, 4, 12)])
def test_changed_element_lies_in_k_windows_of_the_real_padding(lc, lf, length):
    """Element j = L_F lies in min(T, L_C + L_F) = k windows of the padded series (proofs' count)."""
    cfg = BASE.with_(context_length=lc, forecast_length=lf, L=length)
    con = build("T6", cfg)
    col = target_column(cfg)
    starts = torch.arange(cfg.T)
    covering = ((starts <= col) & (col < starts + cfg.window_length)).sum().item()
    assert covering == min(cfg.T, lc + lf) == cfg.k
    assert con.data_p[0, col] != con.data_q[0, col]
    assert (con.data_p != con.data_q).sum() == 1


@pytest.mark.parametrize("theorem", sorted(SCHEMES))
def test_per_sample_gradient_is_the_proofs_gradient_function(theorem):
    """The loop's torch.func per-sample gradient of the construction's model is ±C (or 0 for Poisson) as the proof says."""
    con = build(theorem, CASES[theorem], clip=1.5)
    cfg = con.config
    g = torch.Generator().manual_seed(0)
    index = sample_steps(con, make_sampler(cfg), 50, g)
    windows = gather_windows(con.data_p, index.seq, index.start, cfg.window_length)
    context, forecast = split_window(windows, cfg.context_length)
    grads = per_sample_gradients(con.model, context, forecast)["theta"][..., 0]
    marked = (windows > con.model.plus_above).any(-1)
    expected = torch.where(marked, 1.5, 1.5 * con.model.default)
    if con.model.minus_below is not None:
        expected = torch.where(~marked & (windows < con.model.minus_below).any(-1), -1.5, expected)
    assert torch.equal(grads, expected)
    assert grads.abs().max() <= 1.5  # clipping never binds


@pytest.mark.parametrize("theorem", sorted(SCHEMES))
def test_released_update_follows_the_constructions_mixture(theorem):
    """KS test (fixed seed, 1% level) of the real loop's one-step update against the construction's pair, both worlds."""
    con = build(theorem, CASES[theorem])
    g = torch.Generator().manual_seed(1)
    y_p = released_updates(con, "p", 20000, 1, g).numpy()[:, 0]
    y_q = released_updates(con, "q", 20000, 1, g).numpy()[:, 0]
    num = pair_numeric(con.pair)
    assert goodness_of_fit(y_p, y_q, num).pvalue > 0.01
    a, p, b, q, _ = num
    se = 4 * max(y_p.std(), y_q.std()) / np.sqrt(len(y_p))
    assert abs(y_p.mean() - (a * p).sum()) < se and abs(y_q.mean() - (b * q).sum()) < se


def test_constructions_refuse_what_they_do_not_cover():
    with pytest.raises(ConfigError, match="relation"):
        build("T6", BASE.with_(relation="user"))
    with pytest.raises(TheoremError, match="T11 does not apply.*T = 1"):  # an element in more than φ of its windows
        build("T11", BASE.with_(L=1, sigma_forecast=1.0))
    with pytest.raises(Exception, match="no worst-case construction"):
        build("T2", BASE)
