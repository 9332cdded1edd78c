"""One profiling run: project -> sections -> Profile, robust to failure and Ctrl-C.

Chooses what to profile and where each section's data comes from, then hands
each section to the SectionMeasurer. Whatever happens, the returned Profile holds all
entries measured so far, with ``complete`` and ``failure`` saying how it ended.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from typing import Callable, List, Optional

from ..base.choices import EXECUTOR, OPTIMIZER
from ..base.errors import Interrupted, ProfileError, caused_by_interrupt
from ..project import Project
from ..project.loader import validation_datasets
from ..project.data import DatasetPool, SyntheticSource
from ..result import Profile, Section
from .rounds import EntryCallback, RoundCallback
from .sequence import SectionMeasurer
from .timing import Timer

SectionCallback = Callable[[Section], None]


@dataclass
class Selection:
    optimizers: Optional[List[str]] = None  # None: all
    executors: Optional[List[str]] = None
    training: bool = True
    inference: bool = True


def _pick(available, wanted: Optional[List[str]], what: str) -> List[str]:
    if wanted is None:
        return list(available)
    missing = [w for w in wanted if w not in available]
    if missing:
        raise ProfileError(
            "the project has no %s named %s (it has: %s)"
            % (what, ", ".join("'%s'" % m for m in missing), ", ".join("'%s'" % a for a in available) or "none")
        )
    return list(wanted)


def plan(project: Project, selection: Selection) -> List[Section]:
    """The sections to profile, in NNC's order: optimizers first, then executors."""
    sections = []
    if selection.training:
        for name in _pick(project.optimizers, selection.optimizers, "optimizer"):
            o = project.optimizers[name]
            sections.append(Section(kind=OPTIMIZER, name=name, network=o.network.name))
    if selection.inference:
        for name in _pick(project.executors, selection.executors, "executor"):
            e = project.executors[name]
            sections.append(Section(kind=EXECUTOR, name=name, network=e.network.name))
    if not sections:
        raise ProfileError(
            "nothing to profile: the project has no %s"
            % (
                "optimizer or executor"
                if selection.training and selection.inference
                else "optimizer"
                if selection.training
                else "executor"
            )
        )
    return sections


def executor_datasets(project: Project) -> List[str]:
    """NNC evaluates executors on the validation data (``validation_datasets``)."""
    names = validation_datasets(project.info.proto)
    if not names:
        raise ProfileError("the project defines no dataset for its executors; use --synthetic")
    return names


def out_of_memory(e: BaseException) -> bool:
    return isinstance(e, MemoryError) or "memory error in alloc" in str(e) or "Failed to allocate" in str(e)


def explain_out_of_memory(e: BaseException, section: Optional[Section], project: Project) -> str:
    """One line: where it failed, what it asked for, the estimated peak, what is available, what fits."""
    from ..base.sizes import human, largest_batch
    from .peak import available_memory

    where = "while profiling"
    asked = ""
    function = getattr(e, "nnprofile_function", None)
    if function is not None:
        from .naming import layer_names

        component = None
        if section is not None:
            component = (project.optimizers if section.kind == OPTIMIZER else project.executors).get(section.name)
        names = layer_names(component.network) if component is not None else {}
        name = names.get(function.outputs[0], function.info.type_name) if function.outputs else function.info.type_name
        where = "at layer '%s' (%s, %s)" % (name, function.info.type_name, getattr(e, "nnprofile_phase", "forward"))
        size = sum(int(np.prod(v.shape)) for v in function.outputs) * 4
        asked = ", which asks for %s for its outputs" % human(size)
    elif getattr(e, "nnprofile_entry", None):
        where = "in %s" % getattr(e, "nnprofile_entry")  # noqa: B009 (an attribute nnprofile sets on it)
    text = "out of memory%s %s%s" % (" in %s," % section.title if section is not None else "", where, asked)
    m = section.memory if section is not None else None
    available, source = available_memory()
    estimated = m is not None and m.estimated
    if m is not None and estimated:
        text += "; the estimated peak of a step is %s (activations %s at batch size %d)" % (
            human(m.peak_estimated or 0),
            human(m.activations_at_peak or 0),
            m.batch_size or 1,
        )
    if available is not None:
        text += "; the memory available is %s (%s)" % (human(available), source)
    if m is not None and estimated and available is not None:
        fits = largest_batch(available, m.fixed, m.activations_at_peak or 0, m.batch_size or 1)
        if fits:
            text += "; a batch size of %d fits (--batch-size %d)" % (fits, fits)
        else:
            text += "; not even a batch of one fits"
    return text


def _source(project: Project, section: Section, pool: DatasetPool, synthetic: bool):
    if section.kind == OPTIMIZER:
        component = project.optimizers[section.name]
    else:
        component = project.executors[section.name]
    if synthetic:
        return SyntheticSource(component.network, component.dataset_assign)
    if section.kind == OPTIMIZER:
        return pool.source(list(component.proto.dataset_name))
    return pool.source(executor_datasets(project))


def _failed(e: Exception, profile: Profile, project: Project) -> None:
    """An exception that stopped the run, said in the profile; raises the error the user is told of where it is
    not the exception itself (Ctrl-C inside NNabla's C++, running out of memory)."""
    if caused_by_interrupt(e):  # Ctrl-C inside NNabla's C++ (a SystemError with it in its chain)
        profile.failure = "interrupted by Ctrl-C"
        raise Interrupted("interrupted by Ctrl-C; partial results written") from None
    if out_of_memory(e):
        message = explain_out_of_memory(e, profile.sections[-1] if profile.sections else None, project)
        profile.failure = message
        raise ProfileError(message) from e
    profile.failure = "%s: %s" % (type(e).__name__, " ".join(str(e).split())[:300])


def run(
    project: Project,
    sections: List[Section],
    timer: Timer,
    cache_root: str,
    profile: Profile,
    on_section: Optional[SectionCallback] = None,
    on_entry: Optional[EntryCallback] = None,
    synthetic: bool = False,
    mode: str = "isolated",
    on_section_end: Optional[SectionCallback] = None,
    layers: bool = True,
    on_round: Optional[RoundCallback] = None,
) -> Profile:
    """Profile each planned section into ``profile``; never loses measured entries."""
    measurer = SectionMeasurer(
        timer,
        on_entry=on_entry,
        mode=mode,
        layers=layers,
        backend=(project.run_context.backend, project.run_context.device_id),
        on_round=on_round,
    )
    pool = DatasetPool(project.datasets, cache_root)
    try:
        # Open every data source first: a missing dataset stops the run before any timing.
        sources = [_source(project, section, pool, synthetic) for section in sections]
        profile.notes.extend(pool.notes())
        for section, source in zip(sections, sources):
            profile.sections.append(section)
            if on_section:
                on_section(section)
            if section.kind == OPTIMIZER:
                measurer.profile_optimizer(section, project.optimizers[section.name], source)
            else:
                measurer.profile_executor(section, project.executors[section.name], source)
            if on_section_end:
                on_section_end(section)
        profile.complete = True
    except KeyboardInterrupt:
        profile.failure = "interrupted by Ctrl-C"
        raise Interrupted("interrupted by Ctrl-C; partial results written")
    except ProfileError as e:
        profile.failure = str(e)
        raise
    except Exception as e:
        _failed(e, profile, project)
        raise
    finally:
        pool.close()
        profile.timeline = measurer.timeline.events
        # Which implementations ran (ConvolutionCudaCudnn under cuDNN): part of what was measured.
        profile.header.implementation_classes = sorted(
            {e.impl_class for s in profile.sections for e in s.entries if e.impl_class}
        )
    return profile
