"""``nnprofile check BASELINE NEW``: the regression gate for CI.

Something got slower when the ratio new/baseline is above ``1 + threshold``
and its 95% confidence interval lies above 1 (as asv decides). Within-run
samples understate the spread between runs several times over on a shared
machine, so the interval of a figure holds three parts:

- each run's own uncertainty: the relative standard error of the figure, from
  the spread of its round means (what moves within a run);
- the run-to-run spread: the coefficient of variation of the per-process means
  where the result was made with ``--repeat``, else ``RUN_CV`` (the spread
  ``make bench`` measures between runs of LeNet on this project's VM);
- the machine: a fixed reference workload is timed in every round; when the
  new run's machine was slower, a figure must also be slower than the machine
  was (its ratio divided by the machine's) to count.

The whole step has no samples of its own: it is the sum of its parts' means,
and its variance the sum of theirs (the parts are measured apart). Per layer
(``--layers``), many ratios are tested at once: the Holm correction keeps 40
layers from raising chance alarms, and a layer's change counts only when it moves
the step by 0.5% or more (``LAYER_MATERIAL``): a 4 us layer that doubles is shown,
not failed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..analysis import analyze
from ..base.choices import PART_OF_PHASE
from ..base.errors import ProfileError
from ..base.choices import EXECUTOR, GRAPH, LAYER_PHASES, OPTIMIZER, SCRIPT
from ..result import Entry, Profile, Section
from ..base.stats import percentile
from ..base.student import t_quantile
from .moved import passes_material, say_moved, step_parts

RUN_CV = 0.04  # run-to-run coefficient of variation assumed without --repeat (see make bench)
# A recorded program's figures between identical runs, quiet (4 runs of an MLP with a data iterator and a
# validation every 10 steps, docs/comparing.md): its passes 10-12%, its step 6%. Its hooks' cost is fitted anew
# in each run, and its own Python is timed between them: its figures move more than a project's rounds do.
RECORDED_RUN_CV = 0.12
REGRESSED, UNJUDGED = 1, 3  # the gate's exit codes besides 0 (2: an error, or a usage error)
# The largest slowdown of the machine itself that can excuse a slower figure: this machine's slow spells reach
# 1.2-1.7x; beyond that, the machine (or the reference's context) cannot be judged, and the gate fails.
MACHINE_SPELL = 1.5
# A layer's change counts only when it moves its section's step (inference: forward_all) by this
# share: a 4 us Softmax that doubles is a 0.01% change of a 30 ms step, and no reason to fail a build.
LAYER_MATERIAL = 0.005
Z95 = 1.959964  # two-sided 95%
ALPHA = 0.05  # family-wise error of the per-layer tests (Holm)
COMPARABLE = (
    ("machine", "machine"),
    ("context", "context"),
    ("nnabla", "nnabla version"),
    ("project_sha256", "project"),
)


@dataclass(frozen=True)
class Figure:
    """A mean with its relative standard errors: within the run, and between runs (the spread of one process's
    mean among fresh processes, and how many were pooled: the pooled mean's error is ``run_cv / sqrt(runs)``)."""

    mean_ms: float
    rse: float
    run_cv: float
    runs: int = 1
    measured: bool = False  # run_cv measured over ``runs`` processes (else assumed)

    @property
    def run_error(self) -> float:
        """The pooled mean's run-to-run error; measured over few processes, widened by Student's t (two runs give a
        spread of one degree of freedom: their 95 % interval is 6.5 times the normal's)."""
        error = self.run_cv / math.sqrt(max(1, self.runs))
        return error * t_quantile(0.975, self.runs - 1) / Z95 if self.measured and self.runs >= 2 else error


@dataclass
class Verdict:
    section: str
    metric: str
    baseline: Figure
    new: Figure
    ratio: float
    ci_low: float
    ci_high: float
    slower: bool
    faster: bool
    note: str = ""
    p_value: Optional[float] = None
    # Looks slower than the threshold, but its interval does not rule out no change (or the machine cannot be
    # judged): neither a pass nor a failure. ``repeats``: the runs of each side that would resolve it, where known.
    unresolved: bool = False
    repeats: Optional[int] = None

    @property
    def word(self) -> str:
        return "SLOWER" if self.slower else "UNRESOLVED" if self.unresolved else "faster" if self.faster else "ok"


@dataclass
class Check:
    threshold: float
    comparability: List[str] = field(default_factory=list)
    structure: List[str] = field(default_factory=list)
    verdicts: List[Verdict] = field(default_factory=list)
    machine: List[str] = field(default_factory=list)
    strict_order: bool = False
    # Why the two results cannot be judged at all (an incomplete result; a headline figure or most of the
    # baseline's time missing from the new one): the gate then says so, whatever its figures read.
    refusals: List[str] = field(default_factory=list)

    @property
    def slower(self) -> List[Verdict]:
        return [v for v in self.verdicts if v.slower]

    @property
    def unresolved(self) -> List[Verdict]:
        """The headline figures (steps, passes, updates) that could not be judged: the gate is undecided."""
        return [v for v in self.verdicts if v.unresolved and not v.slower and not v.metric.startswith("layer ")]

    @property
    def unresolved_layers(self) -> List[Verdict]:
        """Layers that could not be judged (``--layers``). Their sections' figures, which hold them, are judged: a
        layer that looks slower by chance (one of dozens, each within its noise) is shown, with the repeats that
        would resolve it, but leaves the gate decided."""
        return [v for v in self.verdicts if v.unresolved and not v.slower and v.metric.startswith("layer ")]

    @property
    def exit_code(self) -> int:
        """``REGRESSED`` (1) where something got slower; else ``UNJUDGED`` (3) where a figure could not be judged (a
        CI job may run again, with more repeats); else 0. Errors and usage are 2 (the command line's)."""
        if self.refusals:
            return UNJUDGED
        if self.slower or (self.strict_order and self.structure):
            return REGRESSED
        if self.unresolved:
            return UNJUDGED
        return 0


def _assumed_cv(section: Section) -> float:
    """The run-to-run spread assumed for a section's figures where one run of each is all there is."""
    return RECORDED_RUN_CV if section.kind in (GRAPH, SCRIPT) else RUN_CV


def _small(e: Entry) -> float:
    """How much wider a mean's interval is than the normal's for the few samples it stands on (Student's t over
    z): an evaluation run twice in a window is no 20-sample mean. Unbounded where no spread was measured. A mean
    over rounds keeps the normal's: the rounds' (or the pooled runs') spread is the run-to-run part, judged apart."""
    st = e.stats
    if not st.rse_known or st.n < 2:
        return math.inf
    if st.round_rse is not None:  # rounds (a project's, or runs pooled): the spread between them is judged apart
        return 1.0
    return t_quantile(0.975, st.n - 1) / Z95


def _figure(entries: Sequence[Entry], assumed_cv: float = RUN_CV) -> Optional[Figure]:
    """The sum of entries' means (one entry: itself), with its standard errors."""
    entries = [e for e in entries if e.samples_ns]
    if not entries:
        return None
    mean = sum(e.mean_ms for e in entries)
    if mean <= 0:
        return None
    small = [_small(e) for e in entries]
    within = (
        math.inf
        if math.inf in small
        else math.sqrt(sum((k * e.stats.rse * e.mean_ms) ** 2 for k, e in zip(small, entries))) / mean
    )
    runs = [e.run_cv for e in entries if e.run_cv is not None]
    measured = bool(runs) and len(runs) == len(entries)
    run_cv = (sum(r * e.mean_ms for r, e in zip(runs, entries)) / mean) if measured else assumed_cv
    processes = min(len(e.run_means) for e in entries) if measured else 1
    return Figure(mean, within, run_cv, max(1, processes), measured and processes >= 2)


def _step_entries(section: Section) -> List[Entry]:
    measured = section.entries_of("step")
    if measured:
        return measured
    return [e for e in section.entries if e.phase in PART_OF_PHASE]


def _metrics(section: Section) -> Dict[str, List[Entry]]:
    out: Dict[str, List[Entry]] = {}
    if section.kind == GRAPH:  # a recorded program's graph: its passes (per call)
        for phase in ("forward_all", "backward_all"):
            if section.entries_of(phase):
                out[phase] = section.entries_of(phase)
        return out
    if section.kind in (OPTIMIZER, SCRIPT):
        out["training step"] = _step_entries(section)
        for phase in ("forward_all", "backward_all"):
            out[phase] = section.entries_of(phase)
        out["update"] = [e for e in section.entries if PART_OF_PHASE.get(e.phase) == "update"]  # the step's part
    elif section.kind == EXECUTOR:
        out["inference forward_all"] = section.entries_of("forward_all")
    return {k: v for k, v in out.items() if v}


def _layer_metrics(section: Section) -> Dict[str, List[Entry]]:
    out: Dict[str, List[Entry]] = {}
    for e in section.entries:
        if e.phase in LAYER_PHASES and e.layer:
            out.setdefault("layer %s" % e.layer, []).append(e)
    return out


def _machine_ratio(base: Section, new: Section, baseline: Profile, other: Profile) -> Optional[float]:
    """How much slower the new run's machine was: the fixed reference workload each round of a project timed (by
    the thread's CPU time: another task's time is not the machine's), else what the header says each machine
    reaches (its matrix product, measured likewise; a recorded program's sections)."""
    if base.reference_ns and new.reference_ns:
        b = percentile(sorted(base.reference_ns), 50)
        n = percentile(sorted(new.reference_ns), 50)
        return n / b if b > 0 else None
    b_rate = (baseline.header.machine_rates or {}).get("gflops")
    n_rate = (other.header.machine_rates or {}).get("gflops")
    return b_rate / n_rate if b_rate and n_rate else None


def _batch(profile: Profile, section: Section) -> Optional[int]:
    if section.memory.batch_size:
        return section.memory.batch_size
    size = profile.header.batch_size
    return size if isinstance(size, int) else None


def _verdict(
    section: str,
    metric: str,
    b: Figure,
    n: Figure,
    threshold: float,
    machine: Optional[float],
    per_sample: Optional[Tuple[int, int]],
) -> Verdict:
    ratio = n.mean_ms / b.mean_ms
    note = ""
    if per_sample is not None:  # per sample, not per step: the batches differ
        ratio *= per_sample[0] / per_sample[1]
        note = "per sample (batch %d against %d)" % (per_sample[1], per_sample[0])
    se = math.sqrt(b.rse**2 + n.rse**2 + b.run_error**2 + n.run_error**2)
    low, high = ratio * math.exp(-Z95 * se), ratio * math.exp(Z95 * se)
    slower = ratio > 1 + threshold and low > 1
    faster = ratio < 1 / (1 + threshold) and high < 1
    unresolved = excused = False
    if ratio > 1 + threshold and machine is not None and machine > 1:
        if machine > MACHINE_SPELL and slower and low / machine > 1 + threshold:
            # slower than the machine itself was, beyond its interval: whatever the machine did, the figure moved
            note = (note + "; " if note else "") + "slower even than the machine itself ran (%.2fx)" % machine
        elif machine > MACHINE_SPELL:  # no slow spell of a machine: the run cannot be judged, and is not excused
            slower, unresolved = False, True
            note = (note + "; " if note else "") + (
                "the machine ran %.2fx slower, beyond its slow spells (%gx): "
                "it cannot be judged, run again" % (machine, MACHINE_SPELL)
            )
        elif ratio / machine <= 1 + threshold:  # no slower than the machine itself was
            slower, excused = False, True
            note = (note + "; " if note else "") + "within the machine's own slowdown (%.2fx)" % machine
    repeats = None
    if ratio > 1 + threshold and not (slower or unresolved or excused):  # looks slower, not shown: neither
        unresolved = True
        repeats = _repeats(ratio, b, n)
        note = (note + "; " if note else "") + (
            "looks %.0f%% slower, but the interval holds no change: %s"
            % (
                100 * (ratio - 1),
                "about %d runs of each, interleaved (--repeat %d), would resolve it" % (repeats, repeats)
                if repeats
                else "repeats cannot resolve it (the runs' own uncertainty is as large)",
            )
        )
    p = 1 - _phi((math.log(ratio) - math.log(1 + threshold)) / se) if se > 0 else (0.0 if slower else 1.0)
    return Verdict(section, metric, b, n, ratio, low, high, slower, faster, note, p, unresolved, repeats)


def _repeats(ratio: float, b: Figure, n: Figure) -> Optional[int]:
    """How many fresh processes of each side would put the interval of this ratio above 1: the runs' spread falls
    with their square root, the runs' own uncertainty stays."""
    wanted = (math.log(ratio) / Z95) ** 2 - b.rse**2 - n.rse**2
    spread = b.run_cv**2 + n.run_cv**2
    if wanted <= 0:
        return None
    return max(2, min(b.runs, n.runs) + 1, min(1000, math.ceil(spread / wanted)))  # (more than were run)


def _material(v: Verdict, step_ms: Optional[float]) -> Verdict:
    """A layer's verdict counts only when its change moves the step by LAYER_MATERIAL or more."""
    if step_ms is None or step_ms <= 0 or not (v.slower or v.faster or v.unresolved):
        return v
    moved = abs(v.new.mean_ms - v.baseline.mean_ms) / step_ms
    if moved < LAYER_MATERIAL:  # (nor is it left unjudged: whatever it did, it could not move the step enough)
        v.slower = v.faster = v.unresolved = False
        v.note = (v.note + "; " if v.note else "") + "moves the step by %.2f%%: not counted (under %g%%)" % (
            100 * moved,
            100 * LAYER_MATERIAL,
        )
    return v


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def _structure(base: Section, new: Section) -> List[str]:
    def layers(s: Section) -> List[Tuple[str, str]]:
        return [(e.layer or "", e.impl_class or "") for e in s.entries_of("forward_function")]

    a, b = layers(base), layers(new)
    if a == b:
        return []
    out = []
    names_a, names_b = [x[0] for x in a], [x[0] for x in b]
    added = [n for n in names_b if n not in names_a]
    removed = [n for n in names_a if n not in names_b]
    if added:
        out.append("%s: layers added: %s" % (base.title, ", ".join(added)))
    if removed:
        out.append("%s: layers removed: %s" % (base.title, ", ".join(removed)))
    common_a = [n for n in names_a if n in names_b]
    common_b = [n for n in names_b if n in names_a]
    if common_a != common_b:
        out.append("%s: layers reordered" % base.title)
    classes_a, classes_b = dict(a), dict(b)
    changed = ["%s (%s -> %s)" % (n, classes_a[n], classes_b[n]) for n in common_b if classes_a[n] != classes_b[n]]
    if changed:
        out.append("%s: another implementation class: %s" % (base.title, ", ".join(changed)))
    return out


def _layer_tests(
    base: Section, other: Section, threshold: float, machine: Optional[float], per_sample: Optional[Tuple[int, int]]
) -> List[Verdict]:
    """Every layer of a section tested (forward + backward), its change counted where it moves the step enough."""
    theirs = _layer_metrics(other)
    whole = [_figure(entries) for entries in list(_metrics(base).values())[:1]]
    step_ms = whole[0].mean_ms if whole and whole[0] is not None else None
    out = []
    for metric, entries in _layer_metrics(base).items():
        cv = _assumed_cv(base)
        b, n = _figure(entries, cv), _figure(theirs.get(metric, []), cv)
        if b is not None and n is not None:
            out.append(_material(_verdict(base.title, metric, b, n, threshold, machine, per_sample), step_ms))
    return out


def _holm(tests: List[Verdict]) -> None:
    """Holm: the k-th smallest p-value is tested at ALPHA / (m - k); stop at the first that is not."""
    ordered = sorted(tests, key=lambda v: v.p_value if v.p_value is not None else 1.0)
    m = len(ordered)
    still = True
    for k, v in enumerate(ordered):
        significant = still and v.p_value is not None and v.p_value <= ALPHA / (m - k)
        still = significant
        v.slower = v.slower and significant


# Of the baseline's time (its sections' headline figures), the share the new result must hold to be judged.
SHARED_AT_LEAST = 0.5


def _counterpart(section: Section, other: Profile) -> Optional[Section]:
    """The section of ``other`` that is ``section``: the same kind and name; a program's step (its script's
    section, named after the script's file) is the other's one script section, whatever the file is called."""
    same = [s for s in other.sections if (s.kind, s.name) == (section.kind, section.name)]
    if same:
        return same[0]
    if section.kind == SCRIPT:
        scripts = [s for s in other.sections if s.kind == SCRIPT]
        if len(scripts) == 1:
            return scripts[0]
    return None


def _incomplete(profile: Profile, side: str) -> List[str]:
    if profile.complete and not profile.failure:
        return []
    return [
        "the %s result is incomplete (%s): its figures stop where it stopped (--allow-incomplete judges it "
        "anyway)" % (side, profile.failure or "interrupted")
    ]


def _missing_time(baseline: Profile, new: Profile) -> List[str]:
    """A headline figure (a step, an inference pass) of the baseline that the new result lacks, and the share of
    the baseline's time the two share, where it is below SHARED_AT_LEAST."""
    out: List[str] = []
    total = shared = 0.0
    for base in baseline.sections:
        figures = _metrics(base)
        if not figures:
            continue
        headline, entries = next(iter(figures.items()))
        b = _figure(entries)
        if b is None:
            continue
        total += b.mean_ms
        same = _counterpart(base, new)
        theirs = _metrics(same).get(headline, []) if same is not None else []
        lacking = sorted({e.label for e in entries} - {e.label for e in theirs})
        if same is not None and _figure(theirs) is not None and not lacking:
            shared += b.mean_ms
        elif same is not None:  # no figure, or one made of fewer parts: a step without its passes reads faster
            out.append(
                "%s: the new result has no %s%s"
                % (base.title, headline, " of the same parts (it lacks %s)" % ", ".join(lacking[:5]) if theirs else "")
            )
    if total > 0 and shared / total < SHARED_AT_LEAST:
        out.append(
            "the two results share %.0f%% of the baseline's time (sections and their headline figures): "
            "too little to judge" % (100 * shared / total)
        )
    return out


def _machine_line(title: str, machine: float) -> str:
    """What the reference workload says of the machine between the runs (``machine``: new over baseline)."""
    beyond = (
        "; beyond this machine's slow spells (%gx): a figure not far slower than that cannot be judged" % MACHINE_SPELL
    )
    return "%s: the machine's fixed reference workload took %.2fx as long in the new run (%s machine)%s" % (
        title,
        machine,
        "a slower" if machine > 1 else "a faster",
        beyond if machine > MACHINE_SPELL else "",
    )


def check(
    baseline: Profile,
    new: Profile,
    threshold: float = 0.10,
    layers: bool = False,
    strict_order: bool = False,
    allow_incomplete: bool = False,
) -> Check:
    """Compare two saved results; see the module's description for what counts as slower. Results that cannot be
    judged (incomplete, unless ``allow_incomplete``; a headline figure or most of the baseline's time missing from
    the new one) are refused: ``Check.refusals``, exit UNJUDGED."""
    result = Check(threshold=threshold, strict_order=strict_order)
    if not allow_incomplete:
        result.refusals += _incomplete(baseline, "baseline") + _incomplete(new, "new")
    result.refusals += _missing_time(baseline, new)
    for key, what in COMPARABLE:
        a, b = getattr(baseline.header, key, None), getattr(new.header, key, None)
        if a != b:
            result.comparability.append("the %s differs: %s against %s" % (what, a, b))
    analyze(baseline)  # both load and analyse cleanly before anything is compared
    layer_tests: List[Verdict] = []
    for base in baseline.sections:
        other = _counterpart(base, new)
        if other is None:
            result.structure.append("%s is missing from the new result" % base.title)
            continue
        result.structure += _structure(base, other)
        machine = _machine_ratio(base, other, baseline, new)
        if machine is not None and abs(machine - 1) > threshold:
            result.machine.append(_machine_line(base.title, machine))
        sizes = (_batch(baseline, base), _batch(new, other))
        per_sample = (sizes[0], sizes[1]) if sizes[0] and sizes[1] and sizes[0] != sizes[1] else None
        for metric, entries in _metrics(base).items():
            cv = _assumed_cv(base)
            b, n = _figure(entries, cv), _figure(_metrics(other).get(metric, []), cv)
            if b is not None and n is not None:
                result.verdicts.append(_verdict(base.title, metric, b, n, threshold, machine, per_sample))
        layer_tests += _layer_tests(base, other, threshold, machine, per_sample)
    _holm(layer_tests)
    if layers:
        result.verdicts += layer_tests
    else:  # the layers are not judged, but a section that got slower names those that did
        for v in result.verdicts:
            slowed = [t.metric[len("layer ") :] for t in layer_tests if t.section == v.section and t.slower]
            if v.slower and slowed:
                v.note = (v.note + "; " if v.note else "") + "layers that slowed: %s" % ", ".join(slowed)
    before = step_parts(baseline)
    passes_material(result.verdicts, {x.title: x.name for x in baseline.sections if x.kind == GRAPH}, before, threshold)
    say_moved(result.verdicts, before, step_parts(new))
    for section in new.sections:
        if _counterpart(section, baseline) is None:
            result.structure.append("%s is new" % section.title)
    if not result.verdicts:
        raise ProfileError(
            "the two results share no entry to compare (%s against %s): nothing can pass or fail"
            % (baseline.header.project or "the baseline", new.header.project or "the new result")
        )
    return result
