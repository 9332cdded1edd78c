"""Loaded at start-up by every Python whose PYTHONPATH holds this folder (the MPI tests' processes):
under an MPI launcher, NNabla's communicator factories become the mpi4py one of mpi_communicator."""
import os

if os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE"):
    import mpi_communicator

    mpi_communicator.install()
