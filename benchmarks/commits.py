"""The recording's cost at two commits, compared in one run: is a change to the recorder no slower?

    python benchmarks/commits.py OLD [--new REV] [--pairs N] [--only NAME ...] [--hooks-only]

OLD (and NEW, by default the working tree as it is) is checked out with ``git worktree`` into a temporary
folder. Each program of ``benchmarks/programs.py`` (or those whose script name contains one of ``--only``)
runs under ``nnprofile run`` with one tree's nnprofile, then with the other's, the order flipped every
pair; the same script and arguments both times. Given per program: the ratio NEW/OLD of the recorded
step's median and of the hooks' cost a function that the calibration measured in the program, each the
geometric mean over the pairs with its 95 % interval (``common.paired_ratio``). Ratios of figures taken
one after the other in one run: a busy machine moves both sides alike. Then the hooks alone
(``HOOKS``: a chain of 200 ReLU run forward under ``Recorder.hooked()`` and without, in one process
per tree and pair): the ratio NEW/OLD of their cost a function.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from statistics import median  # noqa: E402

from common import paired_ratio  # noqa: E402
from programs import PROGRAMS, _recorded_step_ms  # noqa: E402


# The function hooks alone, as the calibration runs them: ns a function they add to a chain of 200 ReLU.
HOOKS = """
import statistics, time
import nnabla as nn, nnabla.functions as F
from nnprofile.recording.recorder import Recorder
try:  # (the calibration's mode, as a function since the hooks became a part of their own)
    from nnprofile.recording.calibrate import hooks_only
except ImportError:
    hooks_only = lambda r: r.hooked()
x = nn.Variable((1,)); h = x
for _ in range(200):
    h = F.relu(h)
def run(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        h.forward(clear_no_need_grad=True)
    return (time.perf_counter_ns() - t) / n / 200
r, plain, hooked = Recorder(calibrate=False), [], []
for _ in range(15):
    plain.append(run(50))
    with hooks_only(r):
        hooked.append(run(50))
    getattr(r, "window", r).events.clear()
print(statistics.median(hooked) - statistics.median(plain))
"""


def _tree(rev, work):
    """A checkout of ``rev`` (None: this working tree)."""
    if rev is None:
        return ROOT
    folder = os.path.join(work, "tree-%s" % rev.replace("/", "_"))
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", folder, rev], check=True, capture_output=True)
    return folder


def _recorded(tree, script, args, folder):
    """One run under the tree's ``nnprofile run``: (the recorded step's median ms, the hooks' cost ns a function)."""
    env = dict(os.environ, PYTHONPATH=tree)
    command = [sys.executable, "-m", "nnprofile", "run", "-q", "-o", folder, script, *args]
    subprocess.run(command, cwd=os.path.dirname(folder), env=env, capture_output=True, text=True, check=True)
    return _recorded_step_ms(folder)


def measure_in(trees, work, pairs, only):
    rows = []
    for title, script, args in PROGRAMS:
        if only and not any(name in os.path.basename(script) for name in only):
            continue
        taken = {"old": [], "new": []}
        for i in range(pairs):
            for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
                folder = os.path.join(work, "%s_%s_%d" % (side, os.path.basename(script), i))
                taken[side].append(_recorded(trees[side], script, args, folder))
        step = paired_ratio([s for s, _ in taken["new"]], [s for s, _ in taken["old"]])
        hooks = paired_ratio([h for _, h in taken["new"]], [h for _, h in taken["old"]])
        rows.append((title, step, hooks))
    return rows


def hooks_in(trees, pairs):
    """The hooks' cost a function, new over old, in alternating pairs (each in a fresh process)."""
    taken = {"old": [], "new": []}
    for i in range(pairs):
        for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
            env = dict(os.environ, PYTHONPATH=trees[side])
            done = subprocess.run([sys.executable, "-c", HOOKS], env=env, capture_output=True, text=True, check=True)
            taken[side].append(float(done.stdout.split()[-1]))
    return paired_ratio(taken["new"], taken["old"]), taken


def lines(old, new, rows, pairs):
    out = [
        "## The recording's cost: %s against %s" % (new or "the working tree", old),
        "",
        "%d pairs per program, alternating, in one run (`benchmarks/commits.py`). Below 1: the new one is cheaper."
        % pairs,
        "",
        "| program | recorded step, new / old [95% interval] | hooks' cost a function, new / old [95% interval] |",
        "|---|---|---|",
    ]
    out += ["| %s | %s | %s |" % (title, step, hooks) for title, step, hooks in rows]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", help="the commit to compare against")
    p.add_argument("--new", help="the commit compared (default: the working tree)")
    p.add_argument("--pairs", type=int, default=6)
    p.add_argument("--only", nargs="*", default=[], help="programs whose script name contains one of these")
    p.add_argument("--hooks-only", action="store_true", help="the hooks alone, no program")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="nnprofile-commits-")
    try:
        trees = {"old": _tree(args.old, work), "new": _tree(args.new, work)}
        if not args.hooks_only:
            rows = measure_in(trees, work, args.pairs, args.only)
            print("\n".join(lines(args.old, args.new, rows, args.pairs)))
        ratio, taken = hooks_in(trees, args.pairs * 2)
        print(
            "\nThe hooks alone (a chain of 200 ReLU under Recorder.hooked(), %d pairs): new / old %s; medians %.0f ns "
            "and %.0f ns a function" % (ratio.pairs, ratio, median(taken["new"]), median(taken["old"]))
        )
    finally:
        for entry in os.listdir(work):
            if entry.startswith("tree-"):
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", os.path.join(work, entry)])
        shutil.rmtree(work, ignore_errors=True)
        subprocess.run(["git", "-C", ROOT, "worktree", "prune"])


if __name__ == "__main__":
    main()
