"""The positional writes of ``nn.Linear``'s factors (training.linear_factors): calls stacked by position into one
(M, t, d) buffer (:func:`stack_positions`) and several linears' inputs side by side in the column blocks of one buffer
(:func:`side_by_side`, both DP engines' tied [ih | hh] groups).

The reference is ``torch.cat`` of every call reshaped to (M, t_call, d) into a fresh tensor, positions in call order
and members in order; the buffers start as NaN, so a position or block left unwritten fails the comparison.
"""
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.training.layer_factors import WORKSPACE
from tsdp.training.linear_factors import side_by_side, stack_positions


def reference(calls, m):
    """The calls' positions in order, (M, t, d), by cat of per-call (M, t_call, d) views into a fresh tensor."""
    return torch.cat([x.reshape(m, -1, x.shape[-1]) for x in calls], dim=1)


def make_calls(m, width, mids, seed):
    """One call per entry of ``mids``: (M, d) for None, else (M, *mid, d)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(m, *([] if mid is None else mid), width, generator=g, dtype=torch.float64) for mid in mids]


MIDS = st.lists(st.one_of(st.none(), st.lists(st.integers(1, 3), min_size=1, max_size=2)), min_size=1, max_size=5)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 3), widths=st.lists(st.integers(1, 5), min_size=1, max_size=3), mids=MIDS,
       one_call=st.lists(st.booleans(), min_size=2, max_size=2), seed=st.integers(0, 2**16))
def test_side_by_side_writes_each_member_by_position_into_its_column_block(m, widths, mids, one_call, seed):
    """Property over members (1 to 3, widths 1-5), the first member's calls ((M, d) positions, (M, *mid, d) calls or a
    mix), each later member's t positions as one (M, t, d) call or t (M, d) calls, and M = 1..3 (the (1, 1, w) blocks
    that torch's cat(out=) leaves unwritten): the buffer equals the members' references side by side, exactly."""
    members = [make_calls(m, widths[0], mids, seed)]
    t = reference(members[0], m).shape[1]
    for k, width in enumerate(widths[1:], 1):
        members.append(make_calls(m, width, [[t]] if one_call[k - 1] else [None] * t, seed + k))
    out = torch.full((m, t, sum(widths)), float("nan"), dtype=torch.float64)
    got = side_by_side(members, out, m)
    assert got is out
    assert torch.equal(got, torch.cat([reference(calls, m) for calls in members], dim=2))


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 3), width=st.integers(1, 5), mids=MIDS, seed=st.integers(0, 2**16))
def test_stack_positions_equals_cat_of_the_calls(m, width, mids, seed):
    """Property over calls ((M, d) positions, (M, *mid, d) calls, or a mix): the stacked (M, t, d) equals the
    reference exactly; one (M, d) call is returned as it is."""
    calls = make_calls(m, width, mids, seed)
    WORKSPACE.buffers.pop(("test", "positions"), None)
    got = stack_positions(calls, m, ("test", "positions"))
    if len(calls) == 1 and calls[0].dim() == 2:
        assert got is calls[0]
    else:
        assert torch.equal(got, reference(calls, m))
    WORKSPACE.end_step()
