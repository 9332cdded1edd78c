"""nnprofile: a layer-level profiler for NNabla and Neural Network Console projects."""
import logging as _logging

__version__ = "0.1.0"

# NNabla logs INFO lines on import and restates its errors as log lines before
# raising them; nnprofile says what matters once, in its own words. Set before
# NNabla is imported (it only configures the root logger). --debug lifts it.
_logging.getLogger("nnabla").setLevel(_logging.CRITICAL + 1)
