"""Which rank of how many this process is, as the launcher that started it says.

``mpirun`` (Open MPI), MPICH's and Intel MPI's Hydra (PMI), MVAPICH and Slurm's
``srun`` each put the rank and the world size in the environment of every
process they start; ``world()`` reads them, and None means one process, run as
it always was. A program that makes an NNabla communicator under a launcher
not listed here still tells its rank through ``comm.rank`` (the recorder notes
it when ``comm.init()`` runs).

Each rank writes its own result into ``OUTDIR/rank-K/``. The ``launch`` is an
identifier every rank of one launch shares (Open MPI's job id, PMIx's namespace,
Slurm's job and step), so that a merge never mixes in a result left by an
earlier launch into the same folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple

RANK_DIR = "rank-%d"


@dataclass(frozen=True)
class World:
    rank: int
    size: int
    launcher: str  # who said so: "Open MPI", "PMI", "MVAPICH", "Slurm", "communicator"
    launch: Optional[str] = None  # shared by the ranks of one launch; None where the launcher gives none
    local_rank: Optional[int] = None

    @property
    def several(self) -> bool:
        return self.size > 1


# launcher, rank variable, size variable, local rank variable, variables that identify the launch
LAUNCHERS: Sequence[Tuple[str, str, str, str, Tuple[str, ...]]] = (
    (
        "Open MPI",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        ("OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"),
    ),
    ("MVAPICH", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", ("PMIX_NAMESPACE",)),
    ("PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", ("PMIX_NAMESPACE", "PMI_KVSNAME")),
)


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def world(env: Optional[Mapping[str, str]] = None) -> Optional[World]:
    """This process's rank and world size from its launcher's environment; None without a launcher."""
    env = os.environ if env is None else env
    for name, rank_var, size_var, local_var, launch_vars in LAUNCHERS:
        rank, size = _int(env.get(rank_var)), _int(env.get(size_var))
        if rank is not None and size is not None and 0 <= rank < size:
            launch = next((env[v] for v in launch_vars if env.get(v)), None)
            return World(rank, size, name, launch, _int(env.get(local_var)))
    # Slurm sets SLURM_PROCID in a batch script too, where one process runs: only a step's tasks count.
    step = env.get("SLURM_STEP_ID", env.get("SLURM_STEPID"))
    rank = _int(env.get("SLURM_PROCID"))
    size = _int(env.get("SLURM_STEP_NUM_TASKS", env.get("SLURM_NTASKS")))
    if step is not None and _int(step) is not None and rank is not None and size is not None and 0 <= rank < size:
        launch = "%s.%s" % (env.get("SLURM_JOB_ID", env.get("SLURM_JOBID", "?")), step)
        return World(rank, size, "Slurm", launch, _int(env.get("SLURM_LOCALID")))
    return None


def rank_dir(outdir: str, rank: int) -> str:
    return os.path.join(outdir, RANK_DIR % rank)
