"""An NNC project loaded as NNC and nnabla_cli load it (.nntxt, .nnp, parameter files: ``loader``), the context
it runs on (``context``) and the data it is fed (``data``); no timing.

Input: project files; output: NNabla's networks, optimizers and executors, for ``nnprofile.measure``.
"""

from .loader import DatasetSpec, Project, load_project, zero_weights

__all__ = ["DatasetSpec", "Project", "load_project", "zero_weights"]
