"""One profile run with each stage timed: the command line in-process, its stages wrapped.

    python benchmarks/stage_times.py PROJECT [nnprofile options]    prints JSON: wall and stage seconds

Stages: starting (imports, calibration), loading the project, measuring (every section, memory
included), the analysis and each renderer, result.json. What is not in a stage is in "other".
"""

from __future__ import annotations

import json
import sys
import time

T0 = time.perf_counter()

from nnprofile import render  # noqa: E402
from nnprofile.api import projects as api_projects  # noqa: E402
from nnprofile.cli import main  # noqa: E402
from nnprofile.result import file as result_file  # noqa: E402

STAGES: dict = {}


def _timed(module, name, stage):
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            STAGES[stage] = STAGES.get(stage, 0.0) + time.perf_counter() - t

    setattr(module, name, wrapper)


def run(argv):
    import nnprofile.project as project

    STAGES["start (imports)"] = time.perf_counter() - T0
    _timed(project, "load_project", "load")
    _timed(api_projects, "run_sections", "measure")
    _timed(render, "analyze", "analysis")
    for name, renderer in render.RENDERERS.items():
        _timed(renderer, "files", name)
    _timed(result_file, "save", "result.json")
    status = main(argv)
    wall = time.perf_counter() - T0
    STAGES["other"] = wall - sum(STAGES.values())
    return status, wall


if __name__ == "__main__":
    status, wall = run(sys.argv[1:])
    print(json.dumps({"status": status, "wall": wall, "stages": STAGES}))
