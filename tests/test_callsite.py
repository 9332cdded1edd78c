"""What a program's line called, read off its bytecode: the name a graph is run on (a subscript of a dict or a
list too), the name a call's result is stored in, and a function's parameter told from the program's own names.
Real frames, no NNabla."""

import sys

from nnprofile.recording.callsite import assigned_name, call_at, line_at, parameter_of
from nnprofile.recording.stack import describe_code


class _Graph:
    def forward(self):
        frame = sys._getframe(1)
        return call_at(frame.f_code, frame.f_lasti, ("forward",))[1]


class _Holder:
    pass


def test_a_graph_run_on_a_subscript_is_named_by_it():
    losses, accuracies, j = {"loss": _Graph()}, [_Graph(), _Graph()], 1
    holder = _Holder()
    holder.metrics = {"x": _Graph()}
    names = [losses["loss"].forward(), accuracies[j].forward(), accuracies[0].forward(), holder.metrics["x"].forward()]
    assert names == ["losses['loss']", "accuracies[j]", "accuracies[0]", "metrics['x']"]


def _made():
    return assigned_name(sys._getframe(1))


def _helper():
    return _made()


def test_the_name_a_call_is_stored_in_is_read_through_a_helper_that_returns_it():
    train_iter = _made()
    holder = _Holder()
    holder.itr0 = _helper()  # made in a helper that returns it: the caller's store names it
    dropped = []
    dropped.append(_made())  # its value handed on, stored in no name
    assert (train_iter, holder.itr0, dropped) == ("train_iter", "itr0", [""])


def test_a_code_objects_calls_know_the_names_their_lines_store():
    def program(encoder, prior, x):
        codes = encoder(x).get_unlinked_variable()
        mu, logvar = encoder(x)
        prior(codes)
        return mu, logvar

    info = describe_code(program.__code__)
    assert sorted({name for _, name in info.stores}) == ["codes", "mu, logvar"]


def test_a_parameter_is_told_from_a_local_name():
    def epoch(iterator, *, n):
        local = 1
        frame = sys._getframe()
        return parameter_of(frame, "iterator"), parameter_of(frame, "n"), parameter_of(frame, "local") and local

    assert epoch(None, n=1) == (True, True, False)


def test_an_instructions_line():
    frame = sys._getframe()
    assert line_at(frame.f_code, frame.f_lasti) == frame.f_lineno
