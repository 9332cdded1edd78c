"""Between windows: the steps counted from the loop's own frame, and only the wrappers that count them left on.

Once the loop is known, each call that may begin an iteration is read off the frame running the loop (which
instruction it is at, which call below it the program is in) instead of the program's whole stack
(``FastLoop``): the rule must be the stack rule's (``nnprofile.assembly.iterations.starts``), on real frames.
Where every iteration of the loop has an update, the updates alone count the steps: the iterators' and
monitors' wrappers come off until a step before the next window. Where some iteration has none (gradients
accumulated over several reads), the reads stay counted. A program that moves on to another loop is followed
there.
"""

import sys

import numpy as np
import pytest

from nnprofile.assembly import iterations as it
from nnprofile.recording.counting import FastLoop
from nnprofile.recording.schedule import Schedule
from nnprofile.recording.stack import Stacks


# -- the rule on real frames ---------------------------------------------------------------------------------


def gan(probe, n):
    for _ in range(n):
        for _ in range(3):
            probe("update")  # the critic
        probe("update")  # the generator


def actor_critic(probe, n):
    def step(t):
        probe("update")  # the critic, every iteration
        if t % 2:
            probe("update")  # the actor, every second

    for t in range(n):
        probe("other")  # a read
        step(t)


def stages(probe, n):
    def train_scale():
        for _ in range(2):
            probe("update")
            probe("update")

    for _ in range(n):
        train_scale()  # a new frame holding the loop at each stage


def one_line(probe, n):
    for _ in range(n):
        probe("other"), probe("update")  # noqa: B018 (two calls on one line)


def helper_loop(probe, n):
    def accumulate():
        for _ in range(2):
            probe("other")  # the same instruction, run again by the helper's own loop

    for _ in range(n):
        accumulate()
        probe("update")


@pytest.mark.parametrize("program", [gan, actor_critic, stages, one_line, helper_loop])
def test_the_loops_frame_tells_where_iterations_begin_as_the_stacks_do(program):
    stacks = Stacks()
    stacks.around(sys._getframe())
    taken, keys = [], []

    def record(key):
        taken.append(stacks.take(sys._getframe(1)))
        keys.append(key)

    program(record, 5)
    loop = it.step_loop([s for s, k in zip(taken, keys) if k == "update"], stacks.codes)
    assert loop is not None
    expected = it.entries(taken, loop, stacks.codes)
    fast = FastLoop(stacks.objects[loop[0]], stacks.codes[loop[0]], loop[1])
    seen = []
    program(lambda key: seen.append(fast.event(sys._getframe(1))), 5)
    assert seen == expected
    assert sum(1 for s in seen if s) >= 5


# -- a recording between windows ----------------------------------------------------------------------------


def _network():
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    from nnabla.utils.data_iterator import data_iterator_simple

    nn.clear_parameters()
    rng = np.random.RandomState(0)
    images = rng.rand(64, 4).astype(np.float32)
    labels = rng.randint(0, 3, size=(64, 1)).astype(np.int32)
    data = data_iterator_simple(
        lambda i: (images[i], labels[i]), 64, 8, shuffle=False, with_memory_cache=False, with_file_cache=False
    )
    data._use_thread = False
    x, t = nn.Variable((8, 4)), nn.Variable((8, 1))
    loss = F.mean(F.softmax_cross_entropy(PF.affine(x, 3, name="fc"), t))
    return data, x, t, loss


def _record(schedule, program, on_window=None):
    from nnprofile.recording.recorder import Recorder

    recorder = Recorder(schedule=schedule, calibrate=False, on_window=on_window).start()
    try:
        program(recorder)
    finally:
        recorder.stop()
    return recorder


def _original_next():
    from nnabla.utils.data_iterator import DataIterator

    return DataIterator.next


def test_updates_alone_count_the_steps_when_every_iteration_has_one():
    import nnabla as nn
    import nnabla.solvers as S

    seen = {}

    def program(recorder):
        data, x, t, loss = _network()
        solver = S.Sgd(0.01)
        solver.set_parameters(nn.get_parameters())
        for i in range(200):
            x.d, t.d = data.next()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            if i == 150:
                seen["reads wrapped"] = recorder.toggles.on["reads"]
                seen["monitors wrapped"] = recorder.toggles.on.get("monitors")
                seen["by frame only"] = recorder.steps.by_frame_only

    recorder = _record(Schedule(wait=10**6), program)
    assert recorder.steps.done == 200
    assert seen == {"reads wrapped": False, "monitors wrapped": False, "by frame only": True}
    assert _original_next() is recorder.toggles.groups["reads"][0].original  # put back at the end


def test_reads_stay_counted_where_gradients_accumulate_over_several():
    import nnabla as nn
    import nnabla.solvers as S

    seen = {}

    def program(recorder):
        data, x, t, loss = _network()
        solver = S.Sgd(0.01)
        solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        for i in range(240):  # one update every 4 reads: the loop's iterations are the reads
            x.d, t.d = data.next()
            loss.forward()
            loss.backward()
            if i % 4 == 3:
                solver.update()
                solver.zero_grad()
        seen["reads wrapped"] = recorder.toggles.on["reads"]

    recorder = _record(Schedule(wait=10**6), program)
    assert seen == {"reads wrapped": True}
    assert recorder.steps.counter.bare > 0 and recorder.steps.done == 240


def test_a_program_that_moves_on_to_another_loop_is_counted_there():
    import nnabla as nn
    import nnabla.solvers as S

    def train(data, x, t, loss, solver, n):
        for _ in range(n):
            x.d, t.d = data.next()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()

    def program(recorder):
        data, x, t, loss = _network()
        solver = S.Sgd(0.01)
        solver.set_parameters(nn.get_parameters())
        for _ in range(120):  # a first stage, its own loop
            x.d, t.d = data.next()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
        train(data, x, t, loss, solver, 150)  # then a loop elsewhere

    recorder = _record(Schedule(wait=10**6), program)
    assert recorder.steps.done == 270, recorder.steps.done


def test_the_wrappers_are_back_a_step_before_the_window_it_begins_at_a_read():
    import nnabla as nn
    import nnabla.solvers as S
    from nnprofile.assembly.events import InputCall, SolverCall

    windows = []

    def program(recorder):
        data, x, t, loss = _network()
        solver = S.Sgd(0.01)
        solver.set_parameters(nn.get_parameters())
        for _ in range(130):
            x.d, t.d = data.next()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()

    recorder = _record(
        Schedule(wait=100, warmup=0, active=5),
        program,
        on_window=lambda r: windows.append((r.windowing.window_start, list(r.window.events))),
    )
    assert recorder.steps.done == 130 and len(windows) == 1
    start, events = windows[0]
    timed = [e for e in events if isinstance(e, (InputCall, SolverCall)) and e.depth == 0]
    assert start == 100 and isinstance(timed[0], InputCall)  # the window's first step from its read on
    assert sum(1 for e in timed if isinstance(e, InputCall)) == 5


def test_a_window_asked_for_between_reads_begins_at_the_next_read():
    import nnabla as nn
    import nnabla.solvers as S
    from nnprofile.assembly.events import InputCall, SolverCall

    windows = []

    def program(recorder):
        data, x, t, loss = _network()
        solver = S.Sgd(0.01)
        solver.set_parameters(nn.get_parameters())
        for i in range(160):
            x.d, t.d = data.next()
            loss.forward()
            if i == 120:
                assert not recorder.toggles.on["reads"]
                recorder.windowing.request_window()  # as the signal's handler does, in the middle of a step
            solver.zero_grad()
            loss.backward()
            solver.update()

    recorder = _record(
        Schedule(on_demand=True, warmup=0, active=5),
        program,
        on_window=lambda r: windows.append((r.windowing.window_start, list(r.window.events))),
    )
    assert len(windows) == 1
    start, events = windows[0]
    timed = [e for e in events if isinstance(e, (InputCall, SolverCall)) and e.depth == 0]
    assert start == 121 and isinstance(timed[0], InputCall)
    assert sum(1 for e in timed if isinstance(e, InputCall)) == 5 and recorder.steps.done == 160


def _epoch(data, x, t, loss, solver, n, train):
    """A trainer's epoch: the same loop for training and for validation (``train``: with updates)."""
    for _ in range(n):
        x.d, t.d = data.next()
        loss.forward()
        if train:
            solver.zero_grad()
            loss.backward()
            solver.update()


@pytest.mark.parametrize("schedule", [Schedule(), Schedule(wait=10**6)], ids=["windowed", "between windows"])
def test_a_validation_through_the_trainings_own_loop_is_no_step(schedule):
    import nnabla as nn
    import nnabla.solvers as S

    def program(recorder):
        data, x, t, loss = _network()
        solver = S.Sgd(0.01)
        solver.set_parameters(nn.get_parameters())
        for _ in range(5):
            _epoch(data, x, t, loss, solver, 6, True)
            _epoch(data, x, t, loss, solver, 2, False)  # a new run of the loop, without an update

    recorder = _record(schedule, program)
    assert recorder.steps.done == 30


@pytest.mark.parametrize("schedule", [Schedule(), Schedule(wait=10**6)], ids=["windowed", "between windows"])
def test_an_environments_steps_before_training_starts_are_no_steps(schedule):
    import nnabla as nn
    import nnabla.solvers as S

    def program(recorder):
        data, x, t, loss = _network()
        solver = S.Sgd(0.01)
        solver.set_parameters(nn.get_parameters())
        for step in range(120):  # an update from step 40 on (the replay buffer full): 80 steps
            x.d, t.d = data.next()
            loss.forward()
            if step >= 40:
                solver.zero_grad()
                loss.backward()
                solver.update()

    recorder = _record(schedule, program)
    assert recorder.steps.done == 80
