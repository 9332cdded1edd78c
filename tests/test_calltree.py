"""Calls inside calls, and steps as the iterations of the program's loop: the pure stages, on hand-made events and
stacks and on stored recordings (tests/events/, made by make.py there). No NNabla runs here.

A stack is the program's frames at a call, outermost first, each (frame token, code, instruction); a code's
loops are (head, last jump back) offsets, as its bytecode gives them. The programs below are written as
offsets in made-up code: what matters is which loop holds which call.
"""

import os

import pytest

from conftest import ROOT
from nnprofile.assembly import capture_file as events, iterations as it, tree
from nnprofile.assembly.assemble import assemble
from nnprofile.assembly.events import Call, InputCall, SolverCall
from nnprofile.assembly.iterations import CodeInfo

EVENTS = os.path.join(ROOT, "tests", "events")


# -- the call tree -----------------------------------------------------------------------------------------


def test_a_calls_children_are_the_deeper_calls_that_ended_just_before_it():
    # A custom layer's forward (depth 0) ran two functions on NdArrays (depth 1); the second ran one of its
    # own (depth 2). Events are kept as they ended: children first.
    inner = Call("mul", 11, 12, kind="eager", depth=2)
    mul2 = Call("mul2", 10, 13, kind="eager", depth=1)
    ident = Call("id", 14, 15, kind="eager", depth=1)
    layer = Call("layer", 9, 16)
    after = Call("next", 17, 18)
    evs = [inner, mul2, ident, layer, after]
    kids = tree.children(evs)
    assert kids[id(layer)] == [mul2, ident] and kids[id(mul2)] == [inner] and id(after) not in kids
    assert tree.descendants(layer, kids) == [inner, mul2, ident]
    assert tree.top_level(evs) == [layer, after]


def test_a_child_whose_parent_was_never_recorded_belongs_to_no_one():
    orphan = Call("f", 1, 2, kind="eager", depth=1)
    top = Call("g", 3, 4)
    assert tree.children([orphan, top]) == {id(top): [orphan]}  # the next call one level up is its parent
    lost = Call("h", 5, 6, kind="eager", depth=2)
    parentless = Call("k", 7, 8)
    assert tree.children([lost, parentless]) == {}  # two levels up: no parent of its own depth


# -- loops read off the program ----------------------------------------------------------------------------

MAIN = CodeInfo("train.py", "main", 1, loops=[(10, 200), (40, 80)], lines=[(0, 1), (10, 5), (40, 7), (100, 9)])
STEP = CodeInfo("train.py", "train_step", 20, loops=[], lines=[(0, 21)])
CODES = [MAIN, STEP]


def at(*frames):
    return tuple(frames)


def test_a_critic_updated_five_times_and_a_generator_once_is_one_step_an_iteration():
    # for it in ...:                   (loop 10-200)
    #     for _ in range(5): critic    (loop 40-80, the update at 60)
    #     generator.update()           (at 120)
    calls = [at((1, 0, 60))] * 5 + [at((1, 0, 120))] + [at((1, 0, 60))] * 5 + [at((1, 0, 120))]
    loop = it.step_loop(calls, CODES)
    assert loop == (0, 10) and it.loop_where(loop, CODES) == "train.py:5"
    assert it.starts(calls, loop, CODES) == [True] + [False] * 5 + [True] + [False] * 5


def test_an_actor_updated_every_second_iteration_leaves_one_step_an_iteration():
    # for t in ...: train_step(t)  (the call at 30 in main); train_step: critic at 5, `if t % 2: actor` at 15
    critic = lambda k: at((1, 0, 30), (k, 1, 5))
    actor = lambda k: at((1, 0, 30), (k, 1, 15))
    calls = [critic(2), critic(3), actor(3), critic(4), critic(5), actor(5)]
    loop = it.step_loop(calls, CODES)
    assert loop == (0, 10)
    assert it.starts(calls, loop, CODES) == [True, True, False, True, True, False]


def test_an_update_made_once_before_the_loop_does_not_choose_it():
    before = at((1, 0, 5))  # outside every loop
    calls = [before] + [at((1, 0, 120))] * 4
    loop = it.step_loop(calls, CODES)
    assert loop == (0, 10)
    assert it.starts(calls, loop, CODES) == [None, True, True, True, True]


def test_no_loop_holds_calls_made_one_after_the_other():
    assert it.step_loop([at((1, 0, 5)), at((1, 0, 6))], CODES) is None


def test_a_loop_in_a_function_called_at_each_stage_counts_its_iterations_at_every_stage():
    # for scale in ...: train_scale()   (main's loop 10-200, the call at 30)
    # train_scale: for i in ...: 3 x dis.update() (inner loop), 3 x gen.update() (inner loop)
    scale = CodeInfo("gan.py", "train_scale", 30, loops=[(10, 100), (20, 40), (50, 70)], lines=[(0, 31)])
    codes = [MAIN, scale]
    dis = lambda k: at((1, 0, 30), (k, 1, 30))
    gen = lambda k: at((1, 0, 30), (k, 1, 60))
    stage = lambda k: [dis(k)] * 3 + [gen(k)] * 3 + [dis(k)] * 3 + [gen(k)] * 3
    calls = stage(2) + stage(3)  # two stages of two iterations, a new call of train_scale each
    loop = it.step_loop(calls, codes)
    assert loop == (1, 10)
    flags = it.starts(calls, loop, codes)
    assert [i for i, f in enumerate(flags) if f] == [0, 6, 12, 18]


def test_the_counter_chooses_the_loop_as_calls_come_and_counts_again_when_it_widens():
    # The critic's updates come first (alone they choose the inner loop); the generator's widen it.
    counter = it.Counter(CODES)
    for call in [at((1, 0, 60))] * 5:
        counter.feed(call, "update")
    assert counter.loop == (0, 40)
    counter.feed(at((1, 0, 120)), "update")  # seen once: the critic's loop still holds every kind that repeats
    assert counter.loop == (0, 40)
    for call in [at((1, 0, 60))] * 5 + [at((1, 0, 120)), at((1, 0, 60))]:
        counter.feed(call, "update")
    assert counter.loop == (0, 10) and counter.completed == 2 and counter.inside  # counted again: 3 begun


# -- which iterations are steps ------------------------------------------------------------------------------


def _gate(iterations, gated=True):
    """Steps of a loop whose iterations are given as the runs of the loop: each run a string, an iteration a
    character: "u" it updates, "." it does not."""
    gate = it.Gate(gated)
    for run in iterations:
        for k, iteration in enumerate(run):
            gate.begin(new_run=k == 0)
            if iteration == "u":
                gate.update()
    return gate.steps


def test_iterations_before_a_runs_first_update_beyond_the_usual_gap_are_no_steps():
    # An environment's steps while the replay buffer fills, then an update every iteration: the steps are
    # the iterations that train.
    assert _gate(["." * 5 + "u" * 4]) == [5, 6, 7, 8]
    # An update every fourth iteration from the first (gradients accumulated): every iteration is a step.
    assert sorted(_gate(["...u" * 3])) == list(range(12))
    # A warm-up of 10 iterations, then an update every third: three iterations a step from the first update's.
    assert sorted(_gate(["." * 10 + "u..u..u.."])) == list(range(8, 19))


def test_a_run_of_the_loop_without_an_update_is_no_step():
    # A trainer's epochs through one loop: training, then a validation through the same loop (a new run).
    steps = _gate(["uuu", "..", "uuu", ".."])
    assert steps == [0, 1, 2, 5, 6, 7]
    assert _gate(["..", ".."], gated=False) == [0, 1, 2, 3]  # no solver: every iteration counts


def test_the_stacks_tell_a_new_run_of_the_loop_from_its_next_iteration():
    # main calls epoch() twice (a training run, then a validation run): the loop is in epoch's code.
    main = CodeInfo("t.py", "main", 1, loops=[(0, 100)], lines=[(0, 2)])
    epoch = CodeInfo("t.py", "epoch", 10, loops=[(10, 60)], lines=[(0, 11)])
    codes = [main, epoch]
    train = lambda token: at((1, 0, 20), (token, 1, 30))
    valid = lambda token: at((1, 0, 40), (token, 1, 30))
    calls = [train(2), train(2), valid(3), valid(3), train(4)]
    loop = (1, 10)
    assert it.entries(calls, loop, codes) == [it.RUN, it.ITERATION, it.RUN, it.ITERATION, it.RUN]


# -- stored recordings (version 2: depth and stack) ----------------------------------------------------------


def load(name):
    return events.load(os.path.join(EVENTS, "%s.json.gz" % name))


def test_a_custom_layers_functions_on_ndarrays_are_its_children_not_eager_work():
    capture = load("custom_layer")
    a = assemble(capture, capture.costs, "custom_layer.py")
    assert [s.name for s in a.sections] == ["loss", "verror", "custom_layer.py"]  # one section per graph
    loss = a.sections[0]
    forward = [e.layer for e in loss.entries_of("forward_function")]
    assert forward == ["fc1/affine", "ReLU", "PythonMul2", "PassThrough", "fc2/affine", "SoftmaxCrossEntropy", "Mean"]
    mul = next(e for e in loss.entries_of("forward_function") if e.layer == "PythonMul2")
    assert mul.layer_type == "PythonMul2" and [c.label for c in mul.children] == [
        "Mul2 (on NdArrays)",
        "Identity (on NdArrays)",
    ]
    back = next(e for e in loss.entries_of("backward_function") if e.layer == "PythonMul2")
    assert {c.label: c.calls for c in back.children}["Mul2 (on NdArrays)"] == 2  # dx0 and dx1
    assert not a.sections[-1].entries_of("eager")  # nothing counted twice beside the layer
    assert str(a.how).startswith("one step per iteration of the program's loop at custom_layer.py:")
    assert (a.steps, a.skip, a.kept_steps) == (6, 1, [2, 3, 4, 5])
    # The trace nests each child inside its layer's call.
    calls = [e for e in a.timeline if e.cat in ("forward", "backward") and e.name == "PythonMul2"]
    inside = [e for e in a.timeline if e.cat == "inside"]
    assert inside and all(
        any(c.start <= x.start and x.end <= c.end for c in calls) for x in inside if x.name.startswith("Mul2")
    )


def test_a_loop_with_an_actor_every_second_iteration_is_one_step_an_iteration():
    capture = load("td3")
    a = assemble(capture, capture.costs, "td3.py")
    # 14 iterations, the first 3 filling the replay buffer (before the first update): 11 steps
    assert a.steps == 11 and a.kept_steps == list(range(2, 10))
    assert str(a.how).endswith(
        "(updates a step: Adam: critic 1, Adam: actor 0.5); the 3 iterations before its first "
        "update are before the first step"
    )
    roles = {s.name: s.info.get("role") for s in a.sections[:-1]}
    assert roles == {
        "policy": "forward",  # the acting policy: every step, its action no single figure, read by nothing trained
        "target_q": "feeds",
        "critic_loss": "trained",
        "actor_loss": "trained",
        "update_actor_target": "updates",
        "update_critic_target": "updates",
    }
    target = next(s for s in a.sections if s.name == "update_actor_target")
    assert target.info["writes"] == ["target/actor"]
    labels = [e.layer for e in target.entries_of("forward_function")]
    assert "Assign (target/actor/fc1/affine/W)" in labels and not any("[2]" in x for x in labels)


def test_a_solver_of_the_programs_own_is_timed_with_its_arithmetic_inside():
    capture = load("riemannian")
    a = assemble(capture, capture.costs, "riemannian.py")
    loss, program = a.sections
    assert loss.info["trained_by"] == ["RiemannianSgd"] and loss.info["role"] == "trained"
    [update] = program.entries_of("update")
    assert update.label == "update (RiemannianSgd)"
    assert {"PowScalar (on NdArrays)", "Sum (on NdArrays)", "Sub2 (on NdArrays)"} <= {c.label for c in update.children}
    assert not program.entries_of("eager")


def test_an_events_file_of_version_1_still_assembles_by_the_pattern_of_its_updates():
    capture = load("gan")
    assert all(getattr(e, "stack", None) is None for e in capture.events) and not capture.codes
    a = assemble(capture, capture.costs, "gan.py")
    assert str(a.how).startswith("solver updates: one step per 2 updates of 2 solvers")


@pytest.mark.parametrize("name", ["custom_layer", "td3", "riemannian"])
def test_a_version_2_capture_round_trips_through_its_file(tmp_path, name):
    capture = load(name)
    again = events.load(events.save(capture, str(tmp_path / "again.json.gz")))
    assert events.to_dict(again) == events.to_dict(capture)
    assert any(getattr(e, "depth", 0) for e in again.events) or name == "td3"
    assert isinstance(next(e for e in again.events if isinstance(e, (SolverCall, InputCall))).stack, tuple)


def test_a_graph_built_anew_each_iteration_under_auto_forward_is_one_graph_a_place():
    capture = load("dynamic_vae")
    a = assemble(capture, capture.costs, "dynamic_vae.py")
    graphs = {s.name: s.info for s in a.sections if s.kind == "graph"}
    loss, vloss = graphs["loss"], graphs["vloss"]
    # the loss, built over several lines (an encoder, a random draw, a decoder), once a step; its validation,
    # the same code called from another line of the loop, every second step, read by nothing trained
    assert (loss["role"], loss["forward_per_step"], loss["backward_per_step"]) == ("trained", 1.0, 1.0)
    assert (vloss["role"], vloss["forward_per_step"], vloss["backward_per_step"]) == ("evaluation", 0.5, 0)
    # after the loop: images drawn from the decoder, a section of their own outside the steps
    assert graphs["sample"]["outside"] == "after the last step"
    layers = [e.layer for e in next(s for s in a.sections if s.name == "loss").entries_of("forward_function")]
    assert "Randn" in layers and layers.count("enc/fc1/affine") == 1
