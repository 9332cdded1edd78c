"""A layer's identity is its function, not its name: forward and backward always pair up right."""

import nnabla as nn
import nnabla.functions as F
import numpy as np

from nnprofile.analysis.breakdown import layer_times
from nnprofile.measure.naming import LayerIndex, only_layers, pass_functions
from nnprofile.result import Entry, Section


def _two_unnamed_relus():
    """x -> ReLU -> ReLU -> mean: two functions that both fall back to the type's name."""
    x = nn.Variable((4, 3), need_grad=True)
    x.d = np.random.RandomState(0).rand(4, 3)
    return F.mean(F.relu(F.relu(x) * 2.0))


def test_backward_entries_carry_their_own_forwards_name_and_id():
    loss = _two_unnamed_relus()
    index = LayerIndex(names={})
    forward = only_layers(index.order(pass_functions(loss)))
    backward = only_layers(index.order(pass_functions(loss, forward=False)))
    relus_f = [l for l in forward if l.type == "ReLU"]
    relus_b = [l for l in backward if l.type == "ReLU"]
    assert [l.name for l in relus_f] == ["ReLU", "ReLU#2"]
    # Backward runs them in reverse: the later ReLU first. Naming each pass on its own
    # (as nnprofile once did) called that one "ReLU" and paired it with the wrong forward.
    assert [l.name for l in relus_b] == ["ReLU#2", "ReLU"]
    assert [l.id for l in relus_b] == [relus_f[1].id, relus_f[0].id]
    assert relus_b[0].function == relus_f[1].function


def _entry(phase, layer, layer_id, ms):
    return Entry(
        label="%s (%s : ReLU)" % (phase, layer),
        phase=phase,
        samples_ns=[ms * 1e6],
        layer=layer,
        layer_id=layer_id,
        layer_type="ReLU",
        impl_class="ReLU",
    )


def test_layer_times_pair_by_id_even_when_names_collide():
    # Two layers that a script could only name "ReLU": ids 0 and 1 tell them apart.
    section = Section(
        kind="optimizer",
        name="O",
        network="N",
        complete=True,
        entries=[
            _entry("forward_function", "ReLU", 0, 1.0),
            _entry("forward_function", "ReLU", 1, 2.0),
            _entry("backward_function", "ReLU", 1, 20.0),
            _entry("backward_function", "ReLU", 0, 10.0),
        ],
    )
    assert [(l.forward_ms, l.backward_ms) for l in layer_times(section)] == [(1.0, 10.0), (2.0, 20.0)]
