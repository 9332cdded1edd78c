"""A communicator for NNabla's CPU build, on mpi4py, for the tests (NNabla's own come with CUDA/NCCL).

It has the methods of ``nnabla.communicator.Communicator`` (init, all_reduce, allreduce, reduce,
bcast, all_gather, reduce_scatter, barrier, abort, add_context_and_parameters, ...) and the
attributes rank, size and local_rank. ``install()`` puts its factory in place of
``nnabla.communicators``' factories (MultiProcessDataParallelCommunicator and its aliases), in both
modules that bind them.
"""
import numpy as np

FACTORIES = ("MultiProcessDataParallelCommunicator", "MultiProcessCommunicator",
             "MultiProcessDataParalellCommunicator", "Comm", "Dist", "DataParallelCommunicator")


class MPICommunicator:
    name = "MPICommunicator"

    def __init__(self, ctx=None):
        self.ctx = ctx
        self._comm = None
        self._params = []

    def init(self):
        from mpi4py import MPI
        self._comm = MPI.COMM_WORLD

    @property
    def rank(self):
        return self._comm.rank

    @property
    def size(self):
        return self._comm.size

    @property
    def local_rank(self):
        return self._comm.rank

    def add_context_and_parameters(self, ctx_param_dict):
        self._params += list(ctx_param_dict[1].values())

    def clear_context_parameters(self):
        self._params = []

    def _reduce_into(self, nd, division, root=None):
        from mpi4py import MPI
        buf = np.ascontiguousarray(nd.data)
        out = np.empty_like(buf)
        if root is None:
            self._comm.Allreduce(buf, out, op=MPI.SUM)
        else:
            self._comm.Reduce(buf, out, op=MPI.SUM, root=root)
            if self.rank != root:
                return
        if division:
            out /= self.size
        nd.data = out

    def all_reduce(self, data, division=False, inplace=False, group="world"):
        for nd in (data if isinstance(data, (list, tuple)) else [data]):
            self._reduce_into(nd, division)

    def allreduce(self, division=False, inplace=False):
        self.all_reduce([p.grad for p in self._params], division, inplace)

    def all_reduce_callback(self, data, pack_size, division=False, group="world", scale_grad=1,
                            keep_dtype=False):
        raise NotImplementedError("all_reduce_callback runs inside NNabla's CUDA backward only")

    def reduce(self, data, dst, division=False, inplace=False, group="world"):
        for nd in (data if isinstance(data, (list, tuple)) else [data]):
            self._reduce_into(nd, division, root=dst)

    def bcast(self, data, src, inplace=False, group="world"):
        for nd in (data if isinstance(data, (list, tuple)) else [data]):
            buf = np.ascontiguousarray(nd.data)
            self._comm.Bcast(buf, root=src)
            nd.data = buf

    def all_gather(self, ndarray, ndarray_list, group="world"):
        parts = self._comm.allgather(np.ascontiguousarray(ndarray.data))
        for target, part in zip(ndarray_list, parts):
            target.data = part

    def reduce_scatter(self, ndarray_list, ndarray, division=False, group="world"):
        from mpi4py import MPI
        total = np.stack([np.ascontiguousarray(nd.data) for nd in ndarray_list])
        out = np.empty_like(total)
        self._comm.Allreduce(total, out, op=MPI.SUM)
        mine = out[self.rank] / (self.size if division else 1)
        ndarray.data = mine

    def barrier(self):
        self._comm.Barrier()

    def abort(self):
        self._comm.Abort()

    def new_group(self, name_ranks):
        return name_ranks[0]

    def find_group(self, group):
        return list(range(self.size))

    def list_groups(self):
        return {"world": list(range(self.size))}


def make(ctx=None):
    return MPICommunicator(ctx)


def install():
    import nnabla.communicator as bound
    import nnabla.communicators as communicators
    for module in (communicators, bound):
        for name in FACTORIES:
            setattr(module, name, make)
