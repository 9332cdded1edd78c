"""Where the batches come from: the project's datasets, or synthetic data.

A data source yields one batch as ``{data_name: ndarray}`` per call, which is
what NNC's ``load_dataset`` step times. A project's own dataset cache is read as
NNabla reads it, where it is complete and newer than its CSV; otherwise a cache is
created inside the output folder, never beside the user's files.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional

import numpy as np

from ..base.errors import ProfileError
from ..result.notes import Note
from ..base.outdir import component, inside
from .csvfiles import check_csv
from .loader import DatasetSpec


class DatasetSource:
    """Batches from an NNC CSV dataset, read through NNabla's cache iterator."""

    def __init__(self, spec: DatasetSpec, cache_root: str):
        self.spec = spec
        if spec.path is None:
            raise ProfileError(
                "dataset '%s': remote dataset '%s' is not supported; use --synthetic" % (spec.name, spec.uri)
            )
        if not os.path.isfile(spec.path):
            where = "" if spec.path == spec.uri else " (looked for %s)" % spec.path
            raise ProfileError(
                "dataset '%s': cannot read '%s'%s; "
                "use --synthetic to profile with generated data" % (spec.name, spec.uri, where)
            )
        # The project's own cache, read as NNabla reads it, where it is complete and newer than its CSV;
        # otherwise one made in the output folder (never beside the user's files).
        self.project_cache = project_cache(spec)
        iterator = _open(spec, self.project_cache, quiet=True) if self.project_cache else None
        if iterator is None:
            self.project_cache = None
            cache_dir = os.path.join(cache_root, component(spec.name, "dataset"))
            if not inside(cache_root, cache_dir) or os.path.realpath(cache_dir) == os.path.realpath(cache_root):
                raise ProfileError(
                    "dataset '%s': its name makes no folder of its own under %s" % (spec.name, cache_root)
                )
            check_csv(spec.name, spec.path)
            _ensure_cache(spec, cache_dir)
            iterator = _open(spec, cache_dir)
        # NNabla's iterator loads the next batch in a thread as it returns one; here each batch is loaded in the
        # calling thread, as the iterator does without its thread: loading a batch is what load_dataset times (as
        # NNC's loop of next() calls does), no loader runs behind the next entries' backs, and the thread's CPU
        # time tells a load other work held up (``nnprofile.base.interference``).
        prefetch = getattr(iterator, "_next_thread", None)
        if prefetch is not None:
            prefetch.join()
        if hasattr(iterator, "_use_thread"):
            iterator._use_thread = False
        self._iterator: Any = iterator
        self.variables = list(self._iterator.variables)
        self.size = int(self._iterator.size)

    def next(self) -> Dict[str, np.ndarray]:
        return dict(zip(self.variables, self._iterator.next()))

    def epoch_reads(self) -> int:
        """Reads that take the iterator through its dataset once (its memory cache then holds it)."""
        return -(-self.size // max(1, self.spec.batch_size))

    def close(self) -> None:
        self._iterator.close()


def _open(spec: DatasetSpec, cache_dir: str, quiet: bool = False) -> Any:
    """NNabla's iterator over a cache folder; None where ``quiet`` and it cannot be opened."""
    from nnabla.utils.data_iterator import data_iterator_cache

    try:
        return data_iterator_cache(
            cache_dir,
            spec.batch_size,
            shuffle=spec.shuffle,
            rng=np.random.RandomState(spec.index),
            normalize=spec.normalize,
            with_memory_cache=True,
        )
    except Exception as e:
        if quiet:
            return None
        raise ProfileError("dataset '%s': cannot be loaded from %s (%s)" % (spec.name, spec.path, type(e).__name__))


def project_cache(spec: DatasetSpec) -> Optional[str]:
    """The project's cache folder where it can stand for the CSV: named by the project (without
    ``overwrite_cache``), its index written after the CSV last changed, every file it lists present,
    and as many rows as the CSV has data lines. None otherwise."""
    folder = spec.cache_dir
    if not folder or spec.overwrite_cache or spec.path is None:
        return None
    index = os.path.join(folder, "cache_index.csv")
    try:
        if os.stat(index).st_mtime_ns < os.stat(spec.path).st_mtime_ns:
            return None
        rows = 0
        with open(index) as f:
            for line in f:
                name, _, count = line.strip().rpartition(",")
                if not name or not os.path.isfile(os.path.join(folder, os.path.basename(name))):
                    return None
                rows += int(count)
        if any(n.endswith(".npy") for n in os.listdir(folder)) and not os.path.isfile(
            os.path.join(folder, "cache_info.csv")
        ):
            return None
        with open(spec.path, "rb") as f:
            lines = sum(1 for line in f if line.strip())
    except (OSError, ValueError):
        return None
    return folder if rows > 0 and rows == lines - 1 else None


def _ensure_cache(spec: DatasetSpec, cache_dir: str) -> None:
    """Create NNabla's dataset cache once; redo it when the CSV changes."""
    assert spec.path is not None  # remote datasets were refused before
    stat = os.stat(spec.path)
    stamp = {"csv": spec.path, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    stamp_file = os.path.join(cache_dir, "nnprofile_source.json")
    try:
        with open(stamp_file) as f:
            if json.load(f) == stamp:
                return
    except (OSError, ValueError):
        pass
    from nnabla.utils.create_cache import CreateCache

    os.makedirs(cache_dir, exist_ok=True)
    for name in os.listdir(cache_dir):  # NNabla's cache files of an earlier run, and nothing else
        if re.fullmatch(CACHE_FILES, name) and os.path.isfile(os.path.join(cache_dir, name)):
            os.remove(os.path.join(cache_dir, name))
    try:
        cc = CreateCache(spec.path, rng=np.random.RandomState(spec.index), shuffle=spec.shuffle)
        cc.create(cache_dir, normalize=False)
    except Exception as e:
        raise ProfileError(  # (never what NNabla's error says: it quotes the file's lines)
            "dataset '%s': cannot read %s (%s)" % (spec.name, spec.path, type(e).__name__)
        )
    with open(stamp_file, "w") as f:
        json.dump(stamp, f)


# What NNabla's CreateCache writes into a cache folder (and nnprofile's stamp): the files a new cache replaces.
CACHE_FILES = r"cache_[0-9_]+\.(h5|npy)|cache_index\.csv|cache_info\.csv|order\.csv|nnprofile_source\.json"


class MultiSource:
    """Several datasets feeding one network (NNC allows a list of datasets)."""

    def __init__(self, sources: List[DatasetSource]):
        self.sources = sources

    def next(self) -> Dict[str, np.ndarray]:
        batch: Dict[str, np.ndarray] = {}
        for s in self.sources:
            batch.update(s.next())
        return batch

    def epoch_reads(self) -> int:
        return max([s.epoch_reads() for s in self.sources] or [0])

    def close(self) -> None:
        for s in self.sources:
            s.close()


class DatasetPool:
    """Opens each dataset once and closes them all at the end."""

    def __init__(self, specs: Dict[str, DatasetSpec], cache_root: str):
        self.specs = specs
        self.cache_root = cache_root
        self._open: Dict[str, DatasetSource] = {}

    def source(self, names: List[str]) -> Optional[MultiSource]:
        sources = []
        for n in names:
            if n not in self.specs:
                raise ProfileError("the project uses dataset '%s', which it does not define" % n)
            if n not in self._open:
                self._open[n] = DatasetSource(self.specs[n], self.cache_root)
            sources.append(self._open[n])
        return MultiSource(sources)

    def notes(self) -> List[Note]:
        """Which datasets were read from the project's own cache."""
        return [
            Note("dataset_cache", {"dataset": s.spec.name, "cache": s.project_cache, "uri": s.spec.uri})
            for s in self._open.values()
            if s.project_cache
        ]

    def close(self) -> None:
        for s in self._open.values():
            s.close()
        self._open.clear()


# Losses whose second input is a class index, and those whose target is 0 or 1.
CLASS_INDEX_LOSSES = ("CategoricalCrossEntropy", "SoftmaxCrossEntropy")
BINARY_TARGET_LOSSES = ("BinaryCrossEntropy", "SigmoidCrossEntropy")
INDEX_INPUTS = ("Embed", "OneHot")


def _shape(network, name):
    pv = network.variables.get(name)
    inst = getattr(pv, "variable_instance", None)
    return tuple(inst.shape) if inst is not None else None


def _synthetic_kind(network, variable_name):
    """What a variable must hold to be valid: ('index', n), ('binary',) or ('real',)."""
    for pf in network.functions.values():
        inputs = list(pf.inputs)
        if pf.type in CLASS_INDEX_LOSSES and len(inputs) > 1 and inputs[1] == variable_name:
            x_shape = _shape(network, inputs[0])
            axis = (pf.args or {}).get("axis", len(x_shape) - 1) if x_shape else 1
            return ("index", x_shape[axis] if x_shape else 1)
        if pf.type in BINARY_TARGET_LOSSES and len(inputs) > 1 and inputs[1] == variable_name:
            return ("binary",)
        if pf.type in INDEX_INPUTS and inputs and inputs[0] == variable_name:
            args = pf.args or {}
            n = args.get("n_inputs") or (list(args.get("shape", [1]))[0])
            return ("index", int(n))
    return ("real",)


class SyntheticSource:
    """Batches of the declared shapes, made up: nothing is read from disk.

    Class labels are valid indices for their loss, binary targets are 0 or 1,
    everything else is uniform in [0, 1) like a normalised image. Two batches
    are made in advance and alternated, so load_dataset costs next to nothing.
    """

    def __init__(self, network, dataset_assign, seed: int = 0):
        rng = np.random.RandomState(seed)
        self.variables = []
        self._batches: List[Dict[str, np.ndarray]] = [{}, {}]
        for pv, data_name in dataset_assign.items():
            shape = tuple(pv.variable_instance.shape)
            kind = _synthetic_kind(network, pv.name)
            self.variables.append(data_name)
            for batch in self._batches:
                if kind[0] == "index":
                    batch[data_name] = rng.randint(0, max(1, kind[1]), size=shape).astype(np.float32)
                elif kind[0] == "binary":
                    batch[data_name] = rng.randint(0, 2, size=shape).astype(np.float32)
                else:
                    batch[data_name] = rng.random_sample(shape).astype(np.float32)
        self._i = 0

    def next(self) -> Dict[str, np.ndarray]:
        self._i ^= 1
        return self._batches[self._i]

    def epoch_reads(self) -> int:
        return 0

    def close(self) -> None:
        pass
