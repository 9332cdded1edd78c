"""nnprofile: a layer-level profiler for NNabla and Neural Network Console projects.

    import nnprofile
    profile = nnprofile.profile("projects/lenet/lenet.nntxt", outdir="results/lenet")
    frame = profile.to_dataframe()          # pandas: one row per entry, in log order
    same = nnprofile.load("results/lenet")  # a saved profile, of any format version
    comparison = nnprofile.compare_results("results/a", "results/b")

    with nnprofile.record(outdir="results/mine") as rec:   # any NNabla code
        for batch in data:
            train_step(batch)                              # a step ends at solver.update()
    rec.profile.to_dataframe()

Importing nnprofile changes nothing in NNabla (its logger included); the
command line quiets NNabla's log for its own run only.
"""
__version__ = "0.2.0"

from .analysis import Analysis, analyze  # noqa: E402
from .api import Recording, load, profile, record, run, step  # noqa: E402
from .compare import Comparison, compare_results  # noqa: E402
from .errors import Interrupted, ProfileError  # noqa: E402
from .result import Entry, Profile, Section  # noqa: E402

__all__ = ["__version__", "profile", "load", "record", "run", "step", "Recording", "compare_results",
           "analyze", "Analysis", "Comparison",
           "Entry", "Profile", "Section", "ProfileError", "Interrupted"]
