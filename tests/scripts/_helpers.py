"""What the test programs share and no real program needs: a step clock for make bench, and monitor folders
removed when the program exits (nothing is left in /tmp). A program imports it from its own folder, first
on its sys.path as Python runs it."""
import atexit
import tempfile

_SCRATCH = []


def timed_steps(args):
    """Each iteration's start, when asked (--time-steps): the median step printed as the program ends."""
    ends = []
    if args.time_steps:
        def report():
            steps = sorted(b - a for a, b in zip(ends[1:], ends[2:]))
            if steps:
                print("median step %.6f ms" % (steps[len(steps) // 2] * 1e3))
        atexit.register(report)
    return ends


def scratch(prefix="monitor-"):
    """A monitor folder removed when the program exits."""
    _SCRATCH.append(tempfile.TemporaryDirectory(prefix=prefix))
    return _SCRATCH[-1].name
