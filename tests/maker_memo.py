"""A corpus data maker run once per test session for each set of arguments (``tests/corpus.py``'s ``prepare``).

Six corpus programs read the same MNIST cache, two the same CIFAR-10 one, and so on; each maker is seeded and
writes only into the folder its first argument names. The corpus's ``run.py prepare`` runs the makers with the
Python it is given: ``prepare`` gives it a shim that runs this script for a maker. The first run of a maker with
given arguments (its program's work folder written as ``{work}``) keeps what it wrote; a later one copies that into
its own folder instead of making it again. Anything else (pip, a program's "before" step) runs as it is.

    python maker_memo.py PYTHON MAKER [ARGS...]    (NNPROFILE_MEMO_WORK, NNPROFILE_MEMO_DIR in the environment)
"""

import hashlib
import os
import shutil
import subprocess
import sys


def _files(folder):
    """Each file under ``folder``: its path relative to it -> (size, mtime)."""
    out = {}
    for here, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(here, name)
            st = os.stat(path)
            out[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns)
    return out


def main(argv):
    python, maker, args = argv[0], argv[1], argv[2:]
    work, memo = os.environ["NNPROFILE_MEMO_WORK"], os.environ["NNPROFILE_MEMO_DIR"]
    out = args[0] if args else ""
    if not out.startswith(work + os.sep) or os.path.isfile(out):  # not a folder of the program's own: as it is
        return subprocess.call([python, maker] + args)
    with open(maker, "rb") as f:
        key = hashlib.sha256(f.read() + "\0".join([maker] + [a.replace(work, "{work}") for a in args]).encode())
    kept = os.path.join(memo, key.hexdigest()[:20])
    if os.path.isdir(kept):
        shutil.copytree(kept, out, dirs_exist_ok=True)
        return 0
    before = _files(out) if os.path.isdir(out) else {}
    code = subprocess.call([python, maker] + args)
    if code != 0 or not os.path.isdir(out):
        return code
    made = [rel for rel, seen in _files(out).items() if before.get(rel) != seen]
    part = "%s.%d" % (kept, os.getpid())
    for rel in made:
        os.makedirs(os.path.dirname(os.path.join(part, rel)), exist_ok=True)
        shutil.copy2(os.path.join(out, rel), os.path.join(part, rel))
    os.makedirs(part, exist_ok=True)
    try:
        os.rename(part, kept)  # whole, or not at all (another worker's may have come first)
    except OSError:
        shutil.rmtree(part, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
