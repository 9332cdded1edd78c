"""Record the programs whose events the assembly's tests read (tests/events/*.json.gz), without NNabla.

    .venv/bin/python tests/events/make.py [NAME ...]   (writes the files beside this one)

Each is ``nnprofile run --save-events`` of a program of tests/scripts/: the recording as data, every
call as it was timed. The tests assert what the program's structure fixes (its steps, graphs, names,
passes per step), and figures computed from the stored times, which are the file's own.
"""
import gzip
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(os.path.dirname(HERE), "scripts")
PROGRAMS = {  # file name -> (program, its arguments, nnprofile run's options)
    "train_validate": ("train_validate.py", ["--iterations", "13", "--val-interval", "4", "--val-iter", "2"], []),
    "gan": ("gan.py", ["--iterations", "6", "--batch-size", "4"], []),
    "static_then_dynamic": ("static_then_dynamic.py", ["--iterations", "3"], []),
    "mlp_dynamic": ("mlp_dynamic.py", [], []),
    # Version 2 of the events (each call's depth and stack): calls inside calls, a loop read off the program.
    "custom_layer": ("custom_layer.py", ["--iterations", "6", "--val-interval", "2"], ["--active", "4"]),
    "td3": ("td3.py", ["--iterations", "14", "--start", "4"], ["--active", "8"]),
    "riemannian": ("riemannian.py", ["--iterations", "5", "--nodes", "50"], ["--active", "3"]),
    # Version 3 (the names calls' results are stored in): dynamic mode end to end, a graph built anew each iteration.
    "dynamic_vae": ("dynamic_vae.py", ["--iterations", "10", "--val-interval", "2"], ["--active", "6"]),
    # The block of steps without the hooks after the kept ones (the step and its passes as the program runs alone).
    "lean": ("train_validate.py", ["--iterations", "36", "--val-interval", "5", "--val-iter", "1"], ["--active", "8"]),
}


def main(names=()):
    for name, (script, args, options) in PROGRAMS.items():
        if names and name not in names:
            continue
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "out")
            subprocess.run([sys.executable, "-m", "nnprofile", "run", "-q", "--save-events", *options, "-o", out,
                            os.path.join(SCRIPTS, script), *args], check=True, cwd=work)
            with open(os.path.join(out, "events.json.gz"), "rb") as f:
                text = gzip.decompress(f.read()).decode("utf-8")
            # The program's files as the repository names them (no machine's own folders in the file).
            text = text.replace(os.path.dirname(os.path.dirname(HERE)) + os.sep, "")
            with open(os.path.join(HERE, "%s.json.gz" % name), "wb") as f:
                f.write(gzip.compress(text.encode("utf-8"), mtime=0))
        print("wrote", name)


if __name__ == "__main__":
    main(sys.argv[1:])  # python make.py [NAME ...]: only those
