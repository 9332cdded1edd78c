"""The vocabulary shared by every part of nnprofile: backends, precisions, modes, phases.

One home for these names, so that the command line, the loader, the profiler,
the analysis and the renderers cannot disagree about them.
"""

from __future__ import annotations

from typing import Dict, Tuple

# Backends a context can run on, and how the user reads them.
BACKENDS: Tuple[str, ...] = ("cpu", "cuda", "cudnn")
GPU_BACKENDS: Tuple[str, ...] = ("cuda", "cudnn")
BACKEND_NAMES: Dict[str, str] = {"cpu": "CPU", "cuda": "CUDA", "cudnn": "cuDNN"}

# Precisions (NNabla's type configs) and the dtypes that mean half precision.
TYPE_CONFIGS: Tuple[str, ...] = ("float", "half")
HALF_DTYPES: Tuple[str, ...] = ("float16", "half")

# How layers are timed: re-run on their own (as NNC), or inside whole passes.
MODES: Tuple[str, ...] = ("isolated", "graph")

# Phases in the order NNC logs them within a section.
PHASES: Tuple[str, ...] = (
    "load_dataset",
    "let_data",
    "generate_data",
    "setup_function",
    "forward_function",
    "prepare_backward",
    "backward_function",
    "forward_all",
    "backward_all",
    "backward_all_wo_zero_grad",
    "engine",
    "communication",
    "eager",
    "weight_decay",
    "solver",
    "update",
    "monitor_loss",
    "checkpoint",
    "step",
)
# "solver": other solver calls of a script (clip_grad_by_norm, scale_grad, ...); "communication": a
# script's communicator calls (all_reduce, bcast, ...); "eager": functions a script called on NdArrays
# (F.pow_scalar(p.grad), p.grad ** 2, +=), by the line that called them; "engine": a graph's passes' time
# between their functions (NNabla's graph engine: allocating, clearing buffers); "checkpoint": a solver's
# save_states and load_states; "step": a script's whole step.
LAYER_PHASES: Tuple[str, ...] = ("forward_function", "backward_function")
# The part of a step each phase's entries count toward (the step breakdown, the ranks' view, the gate's figures):
# one table for projects and programs. Zeroing the gradients before a backward is the solver's work, whether NNC's
# optimizer does it (a project's prepare_backward) or the program calls solver.zero_grad() (recorded as
# prepare_backward): both count in "update". A phase not here (a layer's, setup_function, engine, eager, step) is
# no part of its own: a program's step measures the rest ("other"), its eager work is a part of its own.
PART_OF_PHASE: Dict[str, str] = {
    "load_dataset": "input",
    "let_data": "input",
    "generate_data": "input",
    "forward_all": "forward",
    "backward_all": "backward",
    "prepare_backward": "update",
    "weight_decay": "update",
    "update": "update",
    "solver": "update",
    "monitor_loss": "monitor",
    "communication": "communication",
    "checkpoint": "checkpoint",
}
FORWARD, BACKWARD = LAYER_PHASES

# Kinds of section: a training optimizer or an inference executor of a project; a recorded program's
# graphs (what it called forward and backward on), and its step (input, solvers, monitors, the step).
OPTIMIZER, EXECUTOR, SCRIPT, GRAPH = "optimizer", "executor", "script", "graph"
# A recorded program's own calls outside the steps it kept (before the first kept step, after the last step).
OUTSIDE = "outside"
