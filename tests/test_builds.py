"""Graphs built under auto_forward, read off hand-made calls (``nnprofile.assembly.builds``): which call of the
program's built each function, what is a branch of the trained graph and what a network built apart, where the
program's own code ends a pass; and what each data iterator feeds (``nnprofile.assembly.feeding``)."""

from nnprofile.assembly.builds import apart, build_key, build_name, dynamic_passes, places, read_from
from nnprofile.assembly.events import DYNAMIC, STATIC, Call, Capture, InputCall
from nnprofile.assembly.feeding import evaluation_inputs
from nnprofile.assembly.graphs import Graph
from nnprofile.assembly.iterations import CodeInfo
from nnprofile.assembly.passes import Pass
from nnprofile.base.functions import FunctionInfo, Graph as Functions, VariableInfo

# The program's code: its loop (train, with a loop over offsets 0-100), its loss function, an encoder and a prior.
CODES = [
    CodeInfo("train.py", "train", 10, loops=[(0, 100)], lines=[(0, 10), (20, 12), (40, 14), (60, 16)]),
    CodeInfo("model.py", "loss_fn", 30, lines=[(0, 30), (10, 31), (20, 32)], stores=[(10, "z"), (20, "logits")]),
    CodeInfo("model.py", "encoder", 50, lines=[(0, 50), (10, 51)]),
    CodeInfo("model.py", "prior", 70, lines=[(0, 70), (10, 71)]),
    CodeInfo("train.py", "save_image", 90, lines=[(0, 90)]),
]
LOOP, LOSS_FN, ENCODER, PRIOR, SAVE = range(5)


def _frames(*path):
    """(token, code, offset) frames from (token, code, offset) triples."""
    return tuple(path)


def _call(f, frames, start=0, end=10, entered=None):
    return Call(f, start, end, None, DYNAMIC, 0, None, 0, 0, entered, frames)


def _functions(specs):
    """FunctionInfo per id: (type, reads a parameter, parents)."""
    variables = {0: VariableInfo(0, (4, 4), "float32", True, "enc/W"), 1: VariableInfo(1, (4,), "float32", False)}
    out = []
    for i, (kind, parameter, parents) in enumerate(specs):
        inputs = [0] if parameter else [1]
        out.append(FunctionInfo(i, kind, kind, {}, inputs, [1], [None] if parameter else list(parents)))
    return {f.id: f for f in out}, variables


def test_a_network_built_apart_inside_the_loss_s_own_function_feeds_it_and_a_branch_stays():
    """The loss's function calls an encoder (its own call: Affine reads a parameter, nothing trained) then the
    prior, which the backward reaches: the encoder is held apart; a Mean computed inline beside the prior's
    functions, which nothing trained reads, stays a branch of the trained graph."""
    loop = (1, LOOP, 20)
    enc = _frames(loop, (2, LOSS_FN, 10), (3, ENCODER, 10))
    pri = _frames(loop, (2, LOSS_FN, 20), (4, PRIOR, 10))
    inline = _frames(loop, (2, LOSS_FN, 20))
    calls = [_call(0, enc), _call(1, enc), _call(2, pri), _call(3, inline)]
    functions, _ = _functions([("Affine", True, []), ("Tanh", False, [0]), ("Affine", True, [1]), ("Mean", False, [2])])
    owner = {2: ("auto_forward", 7)}
    p = Pass("forward", calls)
    held = apart(owner, [p], functions, CODES)
    assert set(held) == {0, 1} and held[0] == ("built", ((LOOP, 12), (LOSS_FN, 31), (ENCODER, None)))
    read_from(owner, [[c.function for c in calls]], functions, held)
    assert 1 not in owner  # the encoder's output, which the prior reads, is not pulled into the trained graph
    split = dynamic_passes(p, owner, held, CODES)
    assert [c.function for c in split[("auto_forward", 7)].calls] == [2, 3]  # the Mean: a branch of the build
    assert [c.function for c in split[held[0]].calls] == [0, 1]
    assert build_name(held[0], split[held[0]], CODES) == ("z", "model.py:31")


def test_a_helper_that_reads_no_parameter_is_no_network_apart():
    loop = (1, LOOP, 20)
    helper = _frames(loop, (2, LOSS_FN, 10), (3, ENCODER, 10))
    pri = _frames(loop, (2, LOSS_FN, 20), (4, PRIOR, 10))
    functions, _ = _functions([("Constant", False, []), ("Affine", True, [0])])
    assert apart({1: ("auto_forward", 7)}, [Pass("forward", [_call(0, helper), _call(1, pri)])], functions, CODES) == {}


def test_forward_work_nothing_trained_reads_is_the_graph_of_the_call_that_built_it():
    """Two passes of images saved by one helper from two lines of the loop: a graph each, named by the helper and
    the line that called it; a validation stored in a name is named so; built_at is the lines shared."""
    first = [_call(0, _frames((1, LOOP, 40), (5, SAVE, 0))), _call(1, _frames((1, LOOP, 40), (5, SAVE, 0)))]
    second = [_call(2, _frames((1, LOOP, 60), (6, SAVE, 0)))]
    k1, k2 = build_key(first, CODES), build_key(second, CODES)
    assert k1 != k2 and k1 == ("built", ((LOOP, 14), (SAVE, 90)))
    assert build_name(k1, Pass("forward", first), CODES) == ("save_image at train.py:14", "train.py:14")
    assert places(first, CODES) == ["train.py:14", "train.py:90"]
    validation = [
        _call(3, _frames((1, LOOP, 20), (2, LOSS_FN, 10))),
        _call(4, _frames((1, LOOP, 20), (2, LOSS_FN, 20))),
    ]
    key = build_key(validation, CODES)
    assert key == ("built", ((LOOP, 12), (LOSS_FN, None)))
    assert build_name(key, Pass("forward", validation), CODES)[1] == "train.py:12"


def test_a_dynamic_pass_is_its_functions_and_their_making_not_the_program_s_code_between():
    calls = [_call(0, None, start=100, end=200, entered=60), _call(1, None, start=5000, end=5100, entered=4990)]
    p = Pass("forward", calls)
    assert p.spans() == [(60, 200, calls[0]), (4990, 5100, calls[1])]
    assert [len(r) for r in p.runs()] == [1, 1]
    static = Pass("forward", [Call(0, 0, 10, 1, STATIC), Call(1, 12, 20, 1, STATIC)], site=1)
    assert static.spans() == [(0, 20, static.calls[-1])] and [len(r) for r in static.runs()] == [2]


def _graph(key, name, *steps):
    g = Graph(key, name)
    g.passes = [list(s) for s in steps]
    return g


def test_an_iterator_a_backward_follows_feeds_training_though_a_metric_reads_it_first():
    """A trainer that reads a batch, runs its metric forward, then the loss forward and backward: the batch is the
    training's; its validation reads another iterator, then the metric and the loss forward only: an evaluation's."""
    t = iter(range(1000))

    def call(f, site=1):
        n = next(t)
        return Call(f, n * 10, n * 10 + 5, site, STATIC)

    m1, l1, b1 = call(0), call(1), call(2, 2)
    read_train = InputCall(0, 0, 1)
    m2, l2 = call(0), call(1)
    read_dev = InputCall(1, 0, 1)
    step = [read_train, m1, l1, b1, read_dev, m2, l2]
    metric = _graph(("static", 0), "metric", [Pass("forward", [m1], 1), Pass("forward", [m2], 1)])
    loss = _graph(
        ("static", 1), "loss", [Pass("forward", [l1], 1), Pass("backward", [b1], 2), Pass("forward", [l2], 1)]
    )
    roles = {metric.key: ("evaluation", []), loss.key: ("trained", [])}
    capture = Capture(iterators=[_it("train_data_iter"), _it("dev_data_iter")])
    assert evaluation_inputs([metric, loss], roles, [step], [0], capture) == {"dev_data_iter": "metric"}
    # a program that trains nothing: its data is its input
    assert evaluation_inputs([metric], {metric.key: ("forward", [])}, [step], [0], capture) == {}


def _it(name):
    from nnprofile.assembly.events import IteratorInfo

    return IteratorInfo(name, True)


def test_a_capture_without_frames_keeps_the_pass_s_own_place():
    calls = [Call(0, 0, 10, None, DYNAMIC, 0, ((1, LOOP, 20),))]
    assert build_key(calls, CODES) == ("forward", ((LOOP, 20),))
    Functions()  # (the descriptions module needs no NNabla)
