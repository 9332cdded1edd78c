"""What nnprofile costs a step between windows: the light wrappers alone, timed directly.

Between windows no hook is set; a step of the program still goes through nnprofile's wrappers of
``DataIterator.next`` and of its solver's calls (they count the steps). A loop of a step's calls
(``data.next()``, ``solver.zero_grad()``, ``solver.update()`` on a one-parameter network) is timed
without nnprofile, with the wrappers in place and no window open, and without it again; the best of
three runs of each. Prints JSON: microseconds per step of each.
"""

import json
import time

import numpy as np

import nnabla as nn
import nnabla.parametric_functions as PF
from nnabla import solvers as S
from nnabla.utils.data_iterator import data_iterator_simple

from nnprofile.recording.recorder import Recorder
from nnprofile.recording.schedule import Schedule


def _data():
    data = data_iterator_simple(lambda i: (np.zeros(2, np.float32),), 64, 4, shuffle=False, with_memory_cache=False)
    data._use_thread = False
    return data


def _step_us(solver, data, n=20000):
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter_ns()
        for _ in range(n):
            data.next()
            solver.zero_grad()
            solver.update()
        best = min(best, (time.perf_counter_ns() - t) / n / 1e3)
    return best


def main():
    x = nn.Variable([4, 2])
    PF.affine(x, 1)
    plain = S.Adam()
    plain.set_parameters(nn.get_parameters())
    data = _data()
    before = _step_us(plain, data)
    recorder = Recorder(schedule=Schedule(on_demand=True), calibrate=False).start()  # installed, no window open
    wrapped = S.Adam()
    wrapped.set_parameters(nn.get_parameters())
    light = _step_us(wrapped, _data())
    recorder.stop()
    after = _step_us(plain, data)
    print(json.dumps({"plain_us": min(before, after), "light_us": light}))


if __name__ == "__main__":
    main()
