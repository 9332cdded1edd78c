"""Loading NNC projects (.nntxt, .nnp, parameter files), their context and their data; no timing."""
from .loader import DatasetSpec, Project, load_project, zero_weights

__all__ = ["DatasetSpec", "Project", "load_project", "zero_weights"]
