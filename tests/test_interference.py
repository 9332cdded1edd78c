"""Other work on the machine, injected: a scripted clock and a FakeProbe whose interruptions hold calls up.

An interrupted call is no sample of its layer's cost: every figure stands on the undisturbed samples (weighted by
their chance to run undisturbed), a project takes more rounds until each entry has the runs it was asked for, a
recording takes what its step waited for a CPU off the step, and every output says how much other work took.
"""

import math
import os

import pytest

import nnprofile
from conftest import FIXTURES, FakeClock
from nnprofile.base.hookcost import HookCosts
from nnprofile.base.interference import FakeProbe, shortfall, weights
from nnprofile.base.stats import summarize_undisturbed
from nnprofile.measure.timing import Sampling, Timer

SHARED = os.path.join(FIXTURES, "shared_types.nntxt")
STOLEN = 50_000


class Busy(FakeClock):
    """A scripted clock beside other work: every ``every``-th reading, another task had the CPU for ``STOLEN`` ns
    just before it (the time passes on the clock, not on the thread's CPU time)."""

    def __init__(self, every):
        super().__init__(steps=(1000,))
        self.every = every
        self.probe = FakeProbe(now=lambda: self.t)
        self.hits = 0

    def now_ns(self):
        super().now_ns()
        if self.every and self.readings % self.every == 0:
            self.steal()
        return self.t

    def steal(self, ns=STOLEN):
        self.t += ns
        self.probe.interrupt(1, ns)
        self.hits += 1


def test_an_interrupted_sample_is_seen_by_its_cpu_time_falling_short():
    clock = Busy(every=0)
    timer = Timer(Sampling(runs=1, warmup=0), clock=clock, probe=clock.probe)
    assert timer.sample(lambda: None, 1) == 1000 and not timer.held
    assert timer.sample(clock.steal, 1) == 1000 + STOLEN and timer.held
    # A wait (for a loader thread) is judged by the process's switches: any thread of it held up
    assert timer.sample(lambda: None, 1, blocking=True) == 1000 and not timer.held
    assert timer.sample(clock.steal, 1, blocking=True) == 1000 + STOLEN and timer.held
    assert timer.held_count == 2 and timer.held_rate() == 2 / (4 * 1000 + 2 * STOLEN)
    # the rule itself: a shortfall beyond 10 us and 1% of the call
    assert shortfall(0, 100_000, 0, 100_000 - 11_001, "cpu") and not shortfall(0, 100_000, 0, 100_000 - 11_000, "cpu")
    assert shortfall(0, 1, 3, 4, "switches") and not shortfall(0, 1, 3, 3, "switches")
    assert not shortfall(0, 100_000, 0, 0, "")  # nothing read: nothing known


def test_figures_stand_on_undisturbed_samples_weighted_by_their_chance():
    rate = math.log(2) / 100  # a call of 100 ns runs undisturbed half the time
    samples = [100, 200, 100, 9_000, 200, 100, 200]
    st = summarize_undisturbed(samples, [7], [], [3], rate)
    w = weights([100, 200, 100, 200, 100, 200], rate)
    assert w == pytest.approx([2, 4, 2, 4, 2, 4])
    assert st.mean == pytest.approx((3 * 200 + 3 * 800) / 18)  # 166.7: the long calls count as often as they ran
    assert st.n == 6 and st.disturbed == 1 and st.max == 200 and st.undisturbed_enough
    plain = summarize_undisturbed(samples, [7], [], [3], 0.0)
    assert plain.mean == 150  # unweighted, the short calls' favour shows
    known = summarize_undisturbed(samples, [7], [], [3], rate, taken=[8_800])  # what other work took of it, known
    assert known.mean == pytest.approx(1100 / 7) and known.n == 7 and known.max == 200 and known.disturbed == 1
    few = summarize_undisturbed([100, 9_000, 9_000, 9_000], [4], [], [1, 2, 3], 0.0)
    assert few.mean == 100 and few.n == 1 and not few.undisturbed_enough  # still the clean one, and flagged
    none = summarize_undisturbed([9_000, 9_000], [2], [], [0, 1], 0.0)
    assert none.mean == 9_000 and not none.undisturbed_enough  # nothing clean: every sample, flagged


def test_only_the_interruptions_that_leave_samples_out_weigh_the_rest():
    """A pass other work held up 4 times: 3 with the time it took known (taken off), 1 a wait (left out). The rest
    are weighted for the 1 left out, not for all 4: at the rate of all, the long passes weighed four times over
    (s6-sac's evaluation passes read 40% longer than their functions and the engine between them, under load)."""
    rate = math.log(2) / 100  # held up once every 144 ns: a 100 ns pass half the time
    samples = [100, 200, 100, 9_000, 200, 100, 200, 9_000, 9_000, 9_000]
    st = summarize_undisturbed(samples, [10], [], [3, 7, 8, 9], rate, taken=[None, 8_900, 8_800, 8_900])
    kept = [100, 200, 100, 200, 100, 200, 100, 200, 100]  # the three corrected among them
    w = weights(kept, rate / 4)
    assert st.n == 9 and st.disturbed == 4
    assert st.mean == pytest.approx(sum(v * x for v, x in zip(kept, w)) / sum(w))
    assert 144 < st.mean < 150  # 148.8, near the plain 144.4, where all four interruptions' rate gives 161.5


@pytest.fixture(scope="module")
def busy_project():
    clock = Busy(every=13)
    profile = nnprofile.profile(SHARED, runs=5, synthetic=True, clock=clock, overhead_ns=0, probe=clock.probe)
    return profile, clock


def test_a_project_takes_what_other_work_took_off_each_sample_it_held_up(busy_project):
    profile, clock = busy_project
    assert clock.hits > 20
    held = 0
    for section in profile.sections:
        for e in section.entries:
            assert all(e.samples_ns[i] == 1000 + STOLEN for i in e.disturbed), e.label
            # its wall time less the thread's CPU time; the scripted clock charges each reading a step of CPU time,
            # and the thread's CPU time is read just before the sample's first reading: one step more than its own
            assert e.taken_ns == [STOLEN - 1000] * len(e.disturbed), e.label
            left = [2000.0 if i in e.disturbed else 1000.0 for i in range(len(e.samples_ns))]
            assert e.stats.mean == pytest.approx(sum(left) / len(left)) and e.stats.max == max(left), e.label
            if not e.label.startswith(("forward_all", "backward_all")):  # (those are fed by other entries' runs)
                assert len(e.samples_ns) == 5, e.label  # the 5 runs asked for: a corrected sample is one of them
            held += len(e.disturbed)
        found = section.interference
        assert found.measured and found.disturbed == sum(len(e.disturbed) for e in section.entries)
        assert found.waited_ns > 0 and 0 < found.share < 1
    assert held > 0


def test_a_wait_held_up_is_left_out_and_the_runs_asked_for_taken_again():
    """A read that waits (its time taken not known) held up: left out; --runs takes another round for it alone."""
    from nnprofile.measure.items import Probe as ItemProbe
    from nnprofile.measure.rounds import RoundRunner
    from nnprofile.result import Entry, Section

    clock = Busy(every=0)
    timer = Timer(Sampling(runs=3, warmup=0), clock=clock, probe=clock.probe)
    reads = iter(range(100))

    def read():
        if next(reads) == 1:  # the second read: another task ran while it waited
            clock.steal()

    waits = ItemProbe(lambda m: Entry("load_dataset", "load_dataset", m.samples_ns), read, blocking=True)
    other = ItemProbe(lambda m: Entry("let_data", "let_data", m.samples_ns), lambda: None)
    section = Section("optimizer", "o", "n")
    RoundRunner(timer, reference=False).run(section, [waits, other])
    loads, lets = section.entries
    assert loads.disturbed == [1] and loads.taken_ns == [None] and len(loads.samples_ns) == 4
    assert loads.stats.n == 3 and loads.stats.max == 1000  # the held-up wait left out, and taken again
    assert len(lets.samples_ns) == 3  # done after its 3 runs: it sat out the round that retook the wait


def test_every_output_says_what_other_work_took(busy_project, tmp_path):
    profile, _ = busy_project
    from nnprofile.render import write_all

    write_all(profile, str(tmp_path))
    found = profile.interference()
    share = "other processes took %.0f%%" % (100 * found.share)
    assert share in (tmp_path / "profile.log").read_text()
    assert share in (tmp_path / "report.html").read_text()
    again = nnprofile.load(tmp_path)
    assert again.interference() == found
    assert [e.disturbed for s in again.sections for e in s.entries] == [
        e.disturbed for s in profile.sections for e in s.entries
    ]


def _interrupting_layer(clock, when):
    """A PythonFunction layer that, on the calls ``when`` lists (counted from 0), is held up by other work."""
    from nnabla.function import PythonFunction

    class Held(PythonFunction):
        calls = 0

        @property
        def name(self):
            return "Held"

        def min_outputs(self):
            return 1

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            if Held.calls in when:
                clock.steal()
            Held.calls += 1
            outputs[0].data.copy_from(inputs[0].data)

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            if propagate_down[0]:
                if accum[0]:
                    inputs[0].grad += outputs[0].grad
                else:
                    inputs[0].grad.copy_from(outputs[0].grad)

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return False

    return Held


def test_a_recording_leaves_interrupted_calls_out_and_takes_the_wait_off_its_steps(tmp_path):
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S

    nn.clear_parameters()
    clock = Busy(every=0)
    x = nn.Variable((2, 3))
    x.d = 1.0
    held = _interrupting_layer(clock, when={2, 4})(nn.get_current_context())
    with nn.parameter_scope("fc"):
        loss = F.mean(held(F.relu(PF.affine(x, 4))))
    recording = nnprofile.Recording(
        outdir=tmp_path, skip_first=1, active=8, clock=clock.now_ns, hook_costs=HookCosts(), probe=clock.probe
    )
    with recording:
        solver = S.Sgd()
        solver.set_parameters(nn.get_parameters())
        for _ in range(9):
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
    profile = recording.profile
    graph, program = profile.sections
    [entry] = [e for e in graph.entries_of("forward_function") if e.layer.startswith("Held")]
    # calls 2 and 4 are steps 3 and 5: the first and third kept steps
    # calls 2 and 4 are steps 3 and 5: the first and third kept steps, held up by the time stolen
    assert entry.disturbed == [1, 3] and entry.taken_ns == [STOLEN, STOLEN]
    plain = [s for i, s in enumerate(entry.samples_ns) if i not in (1, 3)]
    assert len(set(plain)) == 1 and entry.samples_ns[1] == entry.samples_ns[3] == plain[0] + STOLEN
    assert entry.mean_ms == plain[0] / 1e6
    passes = [e for e in graph.entries if e.phase == "forward_all"]
    assert passes[0].disturbed == [1, 3] and passes[0].taken_ns == [STOLEN, STOLEN]  # its pass, likewise
    assert len(set(passes[0].round_totals())) == 1  # what other work took taken off: each pass as the others
    assert all(e.disturbed == [] for e in graph.entries + program.entries if e not in (entry, passes[0]))
    [step] = program.entries_of("step")
    # the time waited taken off the steps it fell in, and no other (the last step ends at its last call)
    assert step.waited_ns[:7] == [0, STOLEN, 0, STOLEN, 0, 0, 0]
    assert len(set(step.samples_ns[:7])) == 1
    found = profile.interference()
    assert found.measured and found.waited_ns == 2 * STOLEN and found.disturbed >= 2
    assert found.share == pytest.approx(2 * STOLEN / found.timed_ns)


def test_a_pass_held_up_between_its_functions_counts_less_what_was_taken_there():
    from types import SimpleNamespace
    from nnprofile.assembly.calls import Calls

    capture = SimpleNamespace(graph=SimpleNamespace(functions={}), excluded=[], marks="cpu", events=[], waits=[])
    b = Calls(capture, None, [], {}, 0)
    first = SimpleNamespace(start_ns=0, end_ns=100, m0=0, m1=100)  # ran undisturbed
    second = SimpleNamespace(start_ns=150, end_ns=250, m0=130, m1=200)  # held up 30 ns inside it
    third = SimpleNamespace(start_ns=100_300, end_ns=100_400, m0=50_200, m1=50_300)  # 100 us later, 50 on the CPU
    p = SimpleNamespace(calls=[first, second, third], runs=lambda: [[first, second, third]])
    assert b.taken(second) == 30 and b.taken(first) == 0
    assert b.gap_taken(p) == 50_050  # the second gap: 100,050 ns, 50,000 on the CPU; the first (20 ns) counts not
    # The hooks' cost between the functions stands at no more than the time the thread ran there: what other work
    # took of the gaps is taken off the pass apart (under load, both off one gap left a pass shorter than its layers).
    from nnprofile.assembly import hookfit

    gaps = (second.start_ns - first.end_ns) + (third.start_ns - second.end_ns)
    assert hookfit.overshoot(p, lambda c, q: 60_000, (), b.gap_wait) == 2 * 60_000 - (gaps - 50_050)
    assert hookfit.overshoot(p, lambda c, q: 60_000) == 2 * 60_000 - gaps
    capture.excluded = [(100_000, 100_100)]  # nnprofile's own work in that gap: left out already, not read
    assert Calls(capture, None, [], {}, 0).gap_taken(p) is None


def test_the_calibration_reads_the_threads_cpu_time_where_the_kernel_gives_it():
    """What the hooks cost is measured on the thread's CPU time, so that a busy machine's preemptions stay out of it
    (the clock once fell back to the wall clock unseen, when the probe moved into the recorder's CpuWaits: a TD3
    pass then lost 4 ms of hooks' cost under two competing processes, its layers reading 200% of it)."""
    from nnprofile.assembly.events import CPU
    from nnprofile.recording.calibrate import busy_clock
    from nnprofile.recording.recorder import Recorder

    real = Recorder(calibrate=False)
    if real.cpu.kind != CPU:
        pytest.skip("the kernel gives no thread CPU time here")
    assert busy_clock(real) == real.cpu.probe.cpu_ns
    scripted = Recorder(calibrate=False, clock=lambda: 0)  # a test's clock: no kernel accounting
    assert busy_clock(scripted) is scripted.clock


def test_a_held_up_call_is_corrected_only_where_its_marks_can_be_its_own():
    """A collection nnprofile set off inside a function is left out of its time; under load, other work may hold that
    collection up too, and the marks cannot tell by how much: where they say more was taken than the call's own time,
    what was taken is unknown (its sample left out); else it is what they say."""
    from types import SimpleNamespace
    from nnprofile.assembly.calls import Calls

    call = SimpleNamespace(start_ns=0, end_ns=192_000, m0=0, m1=108_000)  # 84 us held, by its marks

    def taken(excluded):
        capture = SimpleNamespace(graph=SimpleNamespace(functions={}), excluded=excluded, marks="cpu", events=[])
        capture.waits = []
        return Calls(capture, None, [], {}, 0).taken(call)

    assert taken([]) == 84_000
    assert taken([(10_000, 160_000)]) is None  # a 150 us collection inside a call of 42 us of its own
    assert taken([(10_000, 60_000)]) == 84_000  # 50 us of nnprofile's in it: 142 us of its own, 84 taken
