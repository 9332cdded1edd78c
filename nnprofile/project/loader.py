"""Load an NNC project (.nntxt, .nnp, plus parameter files) into NNabla objects.

This follows ``nnabla.utils.load.base_load`` step by step, so that projects
load exactly as NNC and ``nnabla_cli`` load them, with three differences that
a profiler needs: the context is chosen here (with an honest CPU fallback),
dataset paths are resolved against the project file's folder, and data
iterators are not created (``nnprofile.project.data`` does that, inside the output
folder). No timing happens here.
"""

from __future__ import annotations

import hashlib
import os
import types
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import context as contexts
from ..base.readable import check_regular
from .sizes import check_sizes, check_unrolled, parameters_unread
from ..base.errors import ProfileError
from .building import LayerTracker

PROJECT_EXTENSIONS = (".nntxt", ".prototxt", ".protobuf", ".nnp")
PARAMETER_EXTENSIONS = (".h5",)


@dataclass
class DatasetSpec:
    name: str
    uri: str  # as written in the project
    path: Optional[str]  # resolved against the project's folder; None for remote URIs
    batch_size: int
    shuffle: bool
    normalize: bool
    index: int  # position in the project, seeds its shuffling as NNabla does
    cache_dir: Optional[str] = None  # the project's own cache folder, resolved; None where it names none
    overwrite_cache: bool = False


@dataclass
class Project:
    files: List[str]
    name: str
    folder: str
    sha256: str
    info: Any  # NNabla's loaded project (networks, optimizers, ...)
    run_context: contexts.RunContext
    datasets: Dict[str, DatasetSpec] = field(default_factory=dict)
    batch_size: Optional[int] = None

    @property
    def optimizers(self):
        return self.info.optimizers

    @property
    def executors(self):
        return self.info.executors


def resolve_files(paths: Sequence[str]) -> List[str]:
    """The files to load, as a user gives them: a folder stands for its one project file; a Python program is
    told to go to ``nnprofile run``."""
    out: List[str] = []
    for p in paths:
        if p.lower().endswith(".py"):
            raise ProfileError(
                "%s is a Python program, not an NNC project: record it with  nnprofile run %s [ARGS...]" % (p, p)
            )
        if os.path.isdir(p) and os.path.splitext(p)[1].lower() in PROJECT_EXTENSIONS + PARAMETER_EXTENSIONS:
            raise ProfileError("%s is a folder, not a project file" % p)
        if os.path.isdir(p):
            found = sorted(
                f
                for f in os.listdir(p)
                if os.path.splitext(f)[1].lower() in PROJECT_EXTENSIONS and os.path.isfile(os.path.join(p, f))
            )
            if not found:
                raise ProfileError("folder %s holds no project file (%s)" % (p, ", ".join(PROJECT_EXTENSIONS)))
            if len(found) > 1:
                raise ProfileError(
                    "folder %s holds %d project files (%s): give the one to profile" % (p, len(found), ", ".join(found))
                )
            out.append(os.path.join(p, found[0]))
        else:
            out.append(p)
    return out


def _check_files(paths: Sequence[str]) -> None:
    if not paths:
        raise ProfileError("no project file given")
    if not any(os.path.splitext(p)[1].lower() in PROJECT_EXTENSIONS for p in paths):
        raise ProfileError("no project file among %s (expected %s)" % (", ".join(paths), ", ".join(PROJECT_EXTENSIONS)))
    for p in paths:
        ext = os.path.splitext(p)[1].lower()
        if ext not in PROJECT_EXTENSIONS + PARAMETER_EXTENSIONS:
            raise ProfileError(
                "%s: unsupported file type '%s' (expected %s)"
                % (p, ext or "no extension", ", ".join(PROJECT_EXTENSIONS + PARAMETER_EXTENSIONS))
            )
        if not os.path.exists(p):
            raise ProfileError("%s: no such file" % p)
        if os.path.isdir(p):
            raise ProfileError("%s: is a folder, not a project file" % p)
        check_regular(p, "project file")
        try:
            with open(p, "rb") as f:
                f.read(1)
        except OSError as e:
            raise ProfileError("%s: cannot be read (%s)" % (p, e.strerror or e))


def _sha256(paths: Sequence[str]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _read_proto(info, paths: Sequence[str]) -> None:
    from google.protobuf import text_format
    from nnabla.utils.get_file_handle import get_initial_file_loader, load_files
    import zipfile

    for p in paths:
        try:
            check_sizes(p)
            load_files(info, get_initial_file_loader(), [p])
        except text_format.ParseError as e:
            line, col = e.GetLine(), e.GetColumn()
            where = "%s:%s:%s" % (p, line, col) if line else p
            message = str(e)
            prefix = "%s:%s : " % (line, col)
            if message.startswith(prefix):
                message = message[len(prefix) :]
            raise ProfileError("%s: malformed project: %s" % (where, message))
        except zipfile.BadZipFile:
            raise ProfileError("%s: not a valid .nnp file (not a zip archive)" % p)
        except UnicodeDecodeError:
            raise ProfileError("%s: not a text project file (cannot be decoded as UTF-8)" % p)
        except (OSError, KeyError, ValueError) as e:
            raise ProfileError("%s: cannot be loaded (%s)" % (p, e))


def validation_datasets(proto) -> List[str]:
    """The datasets NNC evaluates on: all of the valid_error monitor's, else the last dataset."""
    for m in proto.monitor:
        if m.name == "valid_error" and m.dataset_name:
            return list(m.dataset_name)
    names = [d.name for d in proto.dataset]
    return names[-1:]


def zero_weights() -> None:
    """Zero every weight (/W) and bias (/b), as nnabla_cli profile does before timing."""
    import nnabla as nn

    for name, p in nn.get_parameters(grad_only=False).items():
        if name[-2:] in ("/W", "/b"):
            p.data.zero()


def _foreign_path(uri: str) -> bool:
    """A Windows path (K:\\data\\x.csv) in a project moved to another system."""
    windows_drive = len(uri) > 2 and uri[1] == ":" and uri[0].isalpha() and uri[2] in "\\/"
    return os.sep != "\\" and (windows_drive or "\\" in uri)


def _dataset_specs(proto, folder: str, batch_size: Optional[int]) -> Dict[str, DatasetSpec]:
    specs = {}
    for i, d in enumerate(proto.dataset):
        uri = d.uri
        if "://" in uri:
            path = None
        elif _foreign_path(uri):
            path = uri  # cannot be resolved here; reading it fails with a clear message
        else:
            path = uri if os.path.isabs(uri) else os.path.normpath(os.path.join(folder, uri))
        cache_dir = None
        if d.cache_dir and "://" not in d.cache_dir and not _foreign_path(d.cache_dir):
            cache_dir = os.path.normpath(os.path.join(folder, d.cache_dir))
        specs[d.name] = DatasetSpec(
            name=d.name,
            uri=uri,
            path=path,
            batch_size=batch_size or d.batch_size,
            shuffle=d.shuffle,
            normalize=not d.no_image_normalization,
            index=i,
            cache_dir=cache_dir,
            overwrite_cache=bool(d.overwrite_cache),
        )
    return specs


def _empty_info(batch_size: Optional[int]) -> Any:
    """What NNabla's loader fills (an object of attributes: a namespace is what it expects), over an empty
    parameter scope: parameters live in NNabla's global scope, and one project never sees another's."""
    import nnabla as nn
    from nnabla.utils import nnabla_pb2

    nn.clear_parameters()
    info: Any = types.SimpleNamespace()
    info.prepare_data_iterator = False
    info.batch_size = batch_size
    info.exclude_parameter = False
    info.parameter_only = False
    info.proto = nnabla_pb2.NNablaProtoBuf()
    info.parameter_scope = nn.parameter.get_current_parameter_scope()
    return info


def load_project(
    paths: Sequence[str],
    backend: Optional[str] = None,
    type_config: Optional[str] = None,
    batch_size: Optional[int] = None,
) -> Project:
    """Parse the files, choose the context and build NNabla's networks and solvers."""
    import nnabla as nn
    import nnabla.utils.load as nnload

    paths = [os.fspath(p) for p in paths]
    _check_files(paths)
    main = next(p for p in paths if os.path.splitext(p)[1].lower() in PROJECT_EXTENSIONS)

    info = _empty_info(batch_size)
    _read_proto(info, paths)
    loaded = len(nn.get_parameters(grad_only=False))  # (read from the files: the networks make the rest fresh)
    proto = info.proto
    if not proto.network:
        raise ProfileError("%s: the project defines no network" % main)
    _check_networks(proto, main, batch_size)
    check_unrolled(proto, main, batch_size)

    req_backend, req_tc, device_id = contexts.project_request(proto.global_config.default_context)
    run_context = contexts.resolve(req_backend, req_tc, device_id, backend, type_config)

    unread = parameters_unread(paths, proto, loaded)
    if unread is not None:
        run_context.notes.append(unread)
    info.global_config = types.SimpleNamespace(default_context=run_context.nnabla_context)
    nn.set_default_context(run_context.nnabla_context)
    info.default_context = run_context.nnabla_context
    if proto.HasField("training_config"):
        info.training_config = nnload._training_config(proto)
    info.datasets = nnload._datasets(proto, prepare_data_iterator=False)
    info.renamed_variables = {}
    _build(info, main)
    folder = os.path.dirname(os.path.abspath(main))
    return Project(
        files=paths,
        name=os.path.splitext(os.path.basename(main))[0],
        folder=folder,
        sha256=_sha256(paths),
        info=info,
        run_context=run_context,
        datasets=_dataset_specs(proto, folder, batch_size),
        batch_size=batch_size,
    )


def _build(info: Any, main: str) -> None:
    """NNabla's networks, optimizers, monitors and executors of the project, linked; a failure names its layer."""
    import nnabla as nn
    import nnabla.utils.load as nnload

    building = LayerTracker()
    try:
        with building:
            graph = nn.graph_def.ProtoGraph.from_proto(
                info.proto, param_scope=info.parameter_scope, rng=np.random.RandomState(0)
            )
            info.networks = nnload._networks(info, graph)
        info.optimizers = nnload._optimizers(info)
        info.monitors = nnload._monitors(info)
        info.executors = nnload._executors(info)
        _check_links(info)
        nnload.link_components(info)
    except ProfileError:
        raise
    except Exception as e:  # NNabla reports graph problems with many exception types
        raise ProfileError("%s: %s" % (main, building.error_text(e)))


def _check_networks(proto, main: str, batch_size: Optional[int]) -> None:
    """Sizes NNabla would divide by, or allocate from, without checking."""
    for net in proto.network:
        if batch_size is None and net.batch_size < 1:
            raise ProfileError(
                "%s: network '%s' has batch_size %d; set a positive batch_size "
                "or pass --batch-size" % (main, net.name, net.batch_size)
            )
        for v in net.variable:
            dims = list(v.shape.dim)
            if any(d == 0 or d < -1 for d in dims) or -1 in dims[1:]:
                raise ProfileError(
                    "%s: variable '%s' of network '%s' has an invalid shape %s" % (main, v.name, net.name, dims)
                )
        for r in net.repeat_info:
            if r.times < 1:
                raise ProfileError("%s: loop '%s' of network '%s' repeats %d times" % (main, r.id, net.name, r.times))
        circle = _circle(net)
        if circle:
            raise ProfileError(
                "%s: network '%s' computes a variable from itself (%s): NNabla would search its graph for ever"
                % (main, net.name, " -> ".join(circle[:6]) + (" ..." if len(circle) > 6 else ""))
            )
    for d in proto.dataset:
        if batch_size is None and d.batch_size < 1:
            raise ProfileError("%s: dataset '%s' has batch_size %d" % (main, d.name, d.batch_size))


# Functions whose input may come from a later step by design: a recurrent network's links and loop marks.
_LOOP_TYPES = frozenset(("Delay", "RecurrentInput", "RecurrentOutput", "RepeatStart", "RepeatEnd"))


def _circle(net: Any) -> List[str]:
    """The names of functions that read, through one another, what they compute themselves (a function that takes
    its own output): NNabla's graph search never ends on them. [] where the network's data flows one way."""
    made_by = {o: f.name for f in net.function if f.type not in _LOOP_TYPES for o in f.output}
    reads = {f.name: [made_by[i] for i in f.input if i in made_by] for f in net.function if f.type not in _LOOP_TYPES}
    state: Dict[str, int] = {}  # 1: on the path being walked, 2: done
    for start in reads:
        if state.get(start):
            continue
        path, todo = [start], [iter(reads[start])]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(reads[nxt]))
    return []


def _check_links(info) -> None:
    """Check what optimizers, monitors and executors refer to before NNabla links them.

    NNabla's linker raises bare KeyErrors for a missing variable, and its solver
    crashes the process on a parameter whose layer is not in the network.
    """
    import nnabla.utils.load as nnload

    renamed = info.renamed_variables
    datasets = {d.name for d in info.proto.dataset}
    components = (
        [("optimizer", c) for c in info.proto.optimizer]
        + [("monitor", c) for c in info.proto.monitor]
        + [("executor", c) for c in info.proto.executor]
    )
    for kind, c in components:
        what = "%s '%s'" % (kind, c.name)
        network = info.networks.get(c.network_name)
        if network is None:
            raise ProfileError("%s uses network '%s', which the project does not define" % (what, c.network_name))
        if kind != "executor":
            for d in c.dataset_name:
                if d not in datasets:
                    raise ProfileError("%s uses dataset '%s', which the project does not define" % (what, d))
        refs = [v.variable_name for v in c.data_variable] + [v.variable_name for v in c.generator_variable]
        refs += [v.variable_name for v in getattr(c, "loss_variable", [])]
        refs += [v.variable_name for v in getattr(c, "monitor_variable", [])]
        refs += [v.variable_name for v in getattr(c, "output_variable", [])]
        for name in refs:
            pv = network.variables.get(renamed.get(name, name))
            if pv is None or pv.variable_instance is None:
                raise ProfileError(
                    "%s refers to variable '%s', which network '%s' does not compute" % (what, name, network.name)
                )
        if kind == "monitor":
            continue
        candidates = list(network.parameters) + list(network.variables)
        for p in c.parameter_variable:
            try:
                names = nnload._get_matching_variable_names(p.variable_name, candidates)
            except ValueError:
                raise ProfileError(
                    "%s lists parameter '%s', which network '%s' does not have" % (what, p.variable_name, network.name)
                )
            for name in names:
                pv = network.parameters.get(name) or network.variables.get(name)
                if pv is None or pv.variable_instance is None:
                    raise ProfileError(
                        "%s lists parameter '%s', which no layer of network '%s' uses" % (what, name, network.name)
                    )
