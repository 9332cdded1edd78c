"""Each graph's passes set to the program's own calls of them without the hooks, site by site
(``nnprofile.assembly.sited``): on hand-made passes and calls, whose figures are known."""

from dataclasses import dataclass

import pytest

from nnprofile.assembly import sited

MS = 1_000_000


@dataclass
class P:  # a pass as ``sited`` reads one
    graph: str
    phase: str
    start_ns: int
    end_ns: int
    figure: float  # its estimate with the hooks, other work's share off (``lean.net``)


def _kept(graph, phase, site, at, n, figure):
    """``n`` kept passes of ``graph`` from ``site``, each inside its call: (passes, calls)."""
    passes, notes = [], []
    for k in range(n):
        start = at + k * 10 * MS
        passes.append(P(graph, phase, start + MS, start + 3 * MS, figure))
        notes.append((start, start + 4 * MS, phase, site))
    return passes, notes


def _plain(phase, site, at, times):
    return [(at + k * 10 * MS, at + k * 10 * MS + t, phase, site) for k, t in enumerate(times)]


def _factors(notes, passes, hooked=(), lean=(), typical=()):
    plain = sited.Plain((100 * MS, 1000 * MS), list(hooked), list(lean), {id(p) for p in typical})
    return sited.factors(sorted(notes), passes, plain, lambda p: p.graph, lambda p: p.figure, lambda a, b: float(b - a))


def test_a_sites_plain_calls_mean_against_its_kept_passes_figures():
    passes, notes = _kept("loss", "forward", "t.py:5:4", 0, 4, 2.0 * MS)
    plain = _plain("forward", "t.py:5:4", 100 * MS, [MS, MS, 4 * MS])  # a cold call among them counts
    got = _factors(notes + plain, passes)
    assert got == {("loss", "forward"): pytest.approx(2.0 / 2.0)}  # (a mean of 2 ms against 2 ms a pass)


def test_a_sites_calls_before_the_first_plain_step_the_step_is_measured_over_are_left_out():
    """The step is the plain steps' from the first of the kept steps' usual shape it is measured over (``lean``): a
    site's calls before it (the hooks' leavings in the caches) are not counted, where enough come after; those after
    it are, in whatever step (a slow one, the program's own); a site called too seldom after it (a validation right
    after the kept steps) is its calls wherever made."""
    passes, notes = _kept("loss", "forward", "t.py:5:4", 0, 4, 2.0 * MS)
    v, nv = _kept("valid", "forward", "t.py:9:8", 60 * MS, 1, 4.0 * MS)
    first = _plain("forward", "t.py:5:4", 100 * MS, [3 * MS, 3 * MS])  # right after the kept steps
    valid = _plain("forward", "t.py:9:8", 150 * MS, [2 * MS] * 3)
    usual = _plain("forward", "t.py:5:4", 200 * MS, [MS] * 3)
    slow = _plain("forward", "t.py:5:4", 300 * MS, [4 * MS])  # in a step the step leaves out: a slow spell
    lean = [(200 * MS, 230 * MS)]
    got = _factors(notes + nv + first + valid + usual + slow, passes + v, lean=lean, typical=passes)
    assert got == {("loss", "forward"): pytest.approx(7.0 / 4 / 2.0), ("valid", "forward"): pytest.approx(2.0 / 4.0)}
    assert _factors(notes + first + usual, passes)[("loss", "forward")] == pytest.approx((6 + 3) / 5 / 2.0)


def test_a_graph_called_from_two_sites_weighs_each_by_its_kept_passes():
    a, na = _kept("loss", "forward", "t.py:5:4", 0, 3, 2.0 * MS)  # training
    b, nb = _kept("loss", "forward", "t.py:9:8", 40 * MS, 1, 4.0 * MS)  # a validation
    plain = _plain("forward", "t.py:5:4", 100 * MS, [MS] * 3) + _plain("forward", "t.py:9:8", 500 * MS, [3 * MS] * 3)
    got = _factors(na + nb + plain, a + b)
    assert got[("loss", "forward")] == pytest.approx((3 * 1.0 + 1 * 3.0) / (3 * 2.0 + 4.0))


def test_no_factor_where_a_site_ran_too_few_times_or_a_pass_had_no_site():
    passes, notes = _kept("loss", "forward", "t.py:5:4", 0, 3, 2.0 * MS)
    assert _factors(notes + _plain("forward", "t.py:5:4", 100 * MS, [MS] * (sited.MIN_CALLS - 1)), passes) == {}
    unsited = [(s, e, ph, "") for s, e, ph, _ in notes]  # (a file saved before sites were)
    assert _factors(unsited + _plain("forward", "", 100 * MS, [MS] * 5), passes) == {}
    outside = P("loss", "forward", 60 * MS, 61 * MS, 2.0 * MS)  # a pass no call of the program's holds
    assert _factors(notes + _plain("forward", "t.py:5:4", 100 * MS, [MS] * 3), passes + [outside]) == {}


def test_a_site_whose_call_held_two_passes_or_another_phase_is_no_graphs():
    passes, notes = _kept("loss", "forward", "t.py:5:4", 0, 3, 2.0 * MS)
    second = P("loss", "forward", passes[0].start_ns + MS // 2, passes[0].start_ns + MS // 2 + 1, 1.0)
    plain = _plain("forward", "t.py:5:4", 100 * MS, [MS] * 3)
    assert _factors(notes + plain, passes + [second]) == {}
    backward = [(s, e, "backward", site) for s, e, _, site in notes]
    assert _factors(backward + plain, passes) == {}


def test_a_plain_call_that_held_a_pass_the_hooks_saw_is_left_out():
    passes, notes = _kept("loss", "forward", "t.py:5:4", 0, 3, 2.0 * MS)
    plain = _plain("forward", "t.py:5:4", 100 * MS, [MS] * 3 + [9 * MS])
    hooked = [(130 * MS + MS, 130 * MS + 2 * MS)]  # inside the last (the hooks back on there)
    assert _factors(notes + plain, passes, hooked) == {("loss", "forward"): pytest.approx(0.5)}


def test_a_site_of_several_graphs_is_its_usual_steps_graphs_over_the_plain_steps_of_their_shape():
    """One line runs the training graph, and every few steps a validation's (a function of the program's own called
    from two places): the site is the training graph's, its calls in the plain steps of the usual shape against
    its passes in the usual kept steps; the validation's passes there get no factor from it."""
    train, nt = _kept("train", "forward", "t.py:5:4", 0, 4, 2.0 * MS)
    valid, nv = _kept("valid", "forward", "t.py:5:4", 50 * MS, 1, 8.0 * MS)
    usual = _plain("forward", "t.py:5:4", 100 * MS, [MS] * 3)
    other = _plain("forward", "t.py:5:4", 500 * MS, [6 * MS] * 3)  # (a validation's, in a step of its shape)
    lean = [(100 * MS, 130 * MS)]
    got = _factors(nt + nv + usual + other, train + valid, lean=lean, typical=train)
    assert got == {("train", "forward"): pytest.approx(1.0 / 2.0)}
    assert _factors(nt + nv + usual + other, train + valid, lean=lean, typical=train + valid) == {}
