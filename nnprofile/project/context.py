"""Which NNabla context to run on, and how to wait for its device.

NNC projects usually ask for cuDNN. When nnabla-ext-cuda is missing, a context
the *project* asked for falls back to the CPU with one note; a context the
*user* asked for on the command line is an error, because silently measuring
something else would be dishonest.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, List, Optional

from ..base.choices import BACKEND_NAMES, BACKENDS, TYPE_CONFIGS
from ..base.errors import ProfileError
from ..result.notes import Note


@dataclass
class RunContext:
    backend: str  # cpu, cuda or cudnn: what runs
    type_config: str  # float or half
    device_id: str
    requested: str  # what the project or the user asked for
    nnabla_context: object
    synchronize: Optional[Callable[[], None]]  # None where the backend is synchronous
    notes: List[Note]

    @property
    def description(self) -> str:
        return "%s:%s" % (self.backend, self.type_config)


def project_request(proto_context) -> tuple:
    """(backend, type_config, device_id) a project's default_context asks for."""
    backends = list(proto_context.backends)
    if backends:
        first = backends[0]
        name, _, tc = first.partition(":")
        backend = name if name in BACKENDS else "cpu"
        type_config = tc if tc in TYPE_CONFIGS else "float"
    else:  # old style: backend "cpu|cuda", compute_backend "default|cudnn"
        old = [b.strip() for b in proto_context.backend.split("|")]
        compute = [b.strip() for b in proto_context.compute_backend.split("|")]
        if "cuda" in old:
            backend = "cudnn" if "cudnn" in compute else "cuda"
        else:
            backend = "cpu"
        type_config = "float"
    return backend, type_config, str(proto_context.device_id or "0")


def _quiet_nnabla():
    """NNabla logs an ERROR before raising on a missing extension; we say it once ourselves."""
    logger = logging.getLogger("nnabla")
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    return logger, previous


def extension_available(backend: str) -> bool:
    if backend == "cpu":
        return True
    from nnabla.ext_utils import import_extension_module

    logger, previous = _quiet_nnabla()
    try:
        import_extension_module(backend)
        return True
    except Exception:  # ImportError, or a CUDA runtime that fails to initialise
        return False
    finally:
        logger.setLevel(previous)


def _device_sync(ext, device_id: str) -> Callable[[], None]:
    """Wait for the device: CUDA runs kernels asynchronously."""

    def sync():
        ext.synchronize(device_id=device_id)

    return sync


def resolve(
    project_backend: str,
    project_type_config: str,
    device_id: str,
    backend: Optional[str] = None,
    type_config: Optional[str] = None,
) -> RunContext:
    """Choose the context: command-line overrides, else the project's, with CPU fallback."""
    from nnabla.ext_utils import get_extension_context, import_extension_module

    notes: List[Note] = []
    chosen_tc = type_config or project_type_config
    if backend is not None:
        if backend not in BACKENDS:
            raise ProfileError("unknown context '%s' (choose from %s)" % (backend, ", ".join(BACKENDS)))
        if not extension_available(backend):
            raise ProfileError(
                "context '%s' needs nnabla-ext-cuda, which is not installed "
                "(pip install nnabla-ext-cuda...; or use --context cpu)" % backend
            )
        chosen, requested = backend, backend
    else:
        requested = project_backend
        chosen = project_backend
        if not extension_available(project_backend):
            notes.append(Note("backend_missing", {"backend": BACKEND_NAMES[project_backend]}))
            chosen = "cpu"
    if chosen_tc not in TYPE_CONFIGS:
        raise ProfileError("unknown type config '%s' (choose from %s)" % (chosen_tc, ", ".join(TYPE_CONFIGS)))

    ctx = get_extension_context(chosen, device_id=device_id, type_config=chosen_tc)
    sync = None
    if chosen != "cpu":
        ext = import_extension_module(chosen)
        sync = _device_sync(ext, device_id)
    return RunContext(
        backend=chosen,
        type_config=chosen_tc,
        device_id=device_id,
        requested="%s:%s" % (requested, chosen_tc),
        nnabla_context=ctx,
        synchronize=sync,
        notes=notes,
    )
