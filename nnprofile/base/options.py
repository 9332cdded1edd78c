"""Every option of profiling a project, defined once: its keyword, its flag, its default, its help.

``nnprofile.profile(**options)`` takes the keywords; the command line's parser is built from the
same fields (``add_arguments``); ``--repeat`` hands a fresh process the same options (``argv``);
``nnprofile compare --set KEY=VALUE`` takes the fields marked configurable. Adding an option is
one field here.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .choices import BACKENDS, MODES, TYPE_CONFIGS
from .errors import ProfileError


class BadOption(ProfileError, ValueError):
    """An option's value out of its bounds."""


def _number(text: str, convert: Callable[[str], Any], what: str, ok: Callable[[Any], bool], bound: str) -> Any:
    try:
        value = convert(text)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError("'%s' is not %s" % (text, what))
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError("'%s' is not a finite number" % text)
    if not ok(value):
        raise argparse.ArgumentTypeError("must be %s, not %s" % (bound, text))
    return value


def positive_int(text: str) -> int:
    return _number(text, int, "a whole number", lambda v: v >= 1, "at least 1")


MAX_BATCH = (1 << 31) - 1  # NNabla's shapes are of 32-bit sizes; no batch comes near


def batch_size(text: str) -> int:
    """A batch size: a whole number from 1 to MAX_BATCH."""
    value = positive_int(text)
    if value > MAX_BATCH:
        raise argparse.ArgumentTypeError("a batch of %s is larger than any (at most %d)" % (text[:40], MAX_BATCH))
    return value


def non_negative_int(text: str) -> int:
    return _number(text, int, "a whole number", lambda v: v >= 0, "0 or more")


def positive_float(text: str) -> float:
    return _number(text, float, "a number", lambda v: v > 0, "above 0")


def non_negative_float(text: str) -> float:
    return _number(text, float, "a number", lambda v: v >= 0, "0 or more")


# How a field reads on the command line: a value (--runs 3), a switch (--synthetic), a switch that
# turns a default True off (--no-layers), or a flag given once per value (--optimizer A --optimizer B).
VALUE, SWITCH, NEGATED, APPEND = "value", "switch", "negated", "append"


def option(
    default: Any,
    flag: str,
    help: str,
    kind: str = VALUE,
    type: Optional[Callable[[str], Any]] = None,
    choices: Optional[Sequence[str]] = None,
    metavar: Optional[str] = None,
    configurable: bool = False,
    fresh: bool = True,
) -> Any:
    """A field of an options class. ``configurable``: a key of ``compare --set``; ``fresh``: handed on to
    a fresh process of ``--repeat``."""
    return field(
        default=default,
        metadata={
            "flag": flag,
            "help": help,
            "kind": kind,
            "type": type,
            "choices": tuple(choices) if choices else None,
            "metavar": metavar,
            "configurable": configurable,
            "fresh": fresh,
        },
    )


def add_field(parser: Any, f: "Field[Any]", suffix: str = "", default: Any = MISSING) -> None:
    """One field as an argparse option (``default``: the parser's own, when it differs from the field's)."""
    m = f.metadata
    text = m["help"].replace("%", "%%") + suffix
    kwargs: Dict[str, Any] = {"dest": f.name, "help": text}
    if m["kind"] == SWITCH:
        kwargs.update(action="store_true", default=False if default is MISSING else default)
    elif m["kind"] == NEGATED:
        kwargs.update(action="store_false", default=True if default is MISSING else default)
    else:
        kwargs["default"] = f.default if default is MISSING else default
        if m["kind"] == APPEND:
            kwargs["action"] = "append"
        if m["type"] is not None:
            kwargs["type"] = m["type"]
        if m["choices"] is not None:
            kwargs["choices"] = m["choices"]
        if m["metavar"] is not None:
            kwargs["metavar"] = m["metavar"]
    parser.add_argument(m["flag"], **kwargs)


def field_argv(f: "Field[Any]", value: Any) -> List[str]:
    """The arguments that give a field this value (none where it is the default)."""
    m = f.metadata
    if value is None or value == f.default:
        return []
    if m["kind"] == SWITCH:
        return [m["flag"]] if value else []
    if m["kind"] == NEGATED:
        return [] if value else [m["flag"]]
    if m["kind"] == APPEND:
        return [x for item in value for x in (m["flag"], str(item))]
    return [m["flag"], str(value)]


@dataclass(frozen=True)
class ProfileOptions:
    """What profiling a project can be told (``nnprofile PROJECT --help`` lists the same)."""

    context: Optional[str] = option(
        None,
        "--context",
        "run on this backend instead of the project's global_config",
        choices=BACKENDS,
        configurable=True,
    )
    type_config: Optional[str] = option(
        None, "--type-config", "run in this precision instead of the project's", choices=TYPE_CONFIGS, configurable=True
    )
    batch_size: Optional[int] = option(
        None, "--batch-size", "override the networks' batch size", type=batch_size, configurable=True
    )
    synthetic: bool = option(
        False, "--synthetic", "feed generated data of the declared shapes instead of reading the datasets", kind=SWITCH
    )
    zero_weights: bool = option(
        False,
        "--zero-weights",
        "zero every weight and bias first, as nnabla_cli profile "
        "does (only to compare with it: zeros make some layers unrealistically fast)",
        kind=SWITCH,
    )
    mode: str = option(
        "isolated",
        "--mode",
        "isolated: each function re-run on its own, as NNC measures (default); "
        "graph: each function timed inside real forward and backward passes",
        choices=MODES,
    )
    runs: Optional[int] = option(
        None, "--runs", "a fixed number of rounds of one timed run per entry (default: adaptive)", type=positive_int
    )
    warmup: int = option(1, "--warmup", "untimed runs before timing (default 1)", type=non_negative_int)
    target_rse: float = option(
        0.02,
        "--target-rse",
        "adaptive sampling stops at this relative standard error (default 0.02)",
        type=positive_float,
    )
    min_rounds: int = option(
        5, "--min-rounds", "adaptive: at least this many rounds over all entries (default 5)", type=positive_int
    )
    max_seconds: float = option(
        1.5,
        "--max-seconds",
        "adaptive: time budget of a section, all entries and rounds together (default 1.5)",
        type=positive_float,
    )
    max_seconds_per_entry: float = option(
        0.25,
        "--max-seconds-per-entry",
        "adaptive: an entry is final after this much timed work (default 0.25)",
        type=positive_float,
    )
    drift_threshold: float = option(
        0.10,
        "--drift-threshold",
        "a round more than this far from the median round's speed counts as drift (default 0.10)",
        type=positive_float,
    )
    repeat: int = option(
        1,
        "--repeat",
        "profile in N fresh processes and pool the results, reporting the "
        "run-to-run spread (for nnabla_cli-grade stability, at N times the time)",
        type=positive_int,
        metavar="N",
        fresh=False,
    )
    memory_limit: Union[None, int, str] = option(
        None,
        "--memory-limit",
        "report the largest batch whose estimated peak memory fits in SIZE (e.g. 8GiB, 512MB)",
        metavar="SIZE",
    )
    layers: bool = option(
        True,
        "--no-layers",
        "only the whole-step entries (data, forward_all, backward_all, "
        "update, ...): no per-layer setup, forward and backward entries",
        kind=NEGATED,
    )
    optimizers: Optional[Tuple[str, ...]] = option(
        None, "--optimizer", "profile only this optimizer", kind=APPEND, metavar="NAME"
    )
    executors: Optional[Tuple[str, ...]] = option(
        None, "--executor", "profile only this executor", kind=APPEND, metavar="NAME"
    )
    training: bool = option(True, "--no-training", "skip the optimizers", kind=NEGATED)
    inference: bool = option(True, "--no-inference", "skip the executors", kind=NEGATED)

    def __post_init__(self) -> None:
        for name in ("optimizers", "executors"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))
        self.check()

    def check(self) -> None:
        """Every value within its bounds, whoever gave it (the command line's parser, a keyword of the API):
        a bad one is ``BadOption`` (a ProfileError and a ValueError) naming the option, before any work."""
        for f in fields(self):
            value, m = getattr(self, f.name), f.metadata
            if value is None or isinstance(value, bool) or m["kind"] != VALUE or m["type"] is None:
                continue
            if isinstance(value, (int, float)):
                try:
                    m["type"](repr(value) if isinstance(value, float) else str(value))
                except argparse.ArgumentTypeError as e:
                    raise BadOption("%s: %s" % (m["flag"], e))
            if m["choices"] is not None and value not in m["choices"]:
                raise BadOption("%s: %r is not one of %s" % (m["flag"], value, ", ".join(m["choices"])))
        if not self.training and not self.inference:
            raise BadOption("--no-training and --no-inference together leave nothing to profile")

    @classmethod
    def of(cls, **settings: Any) -> "ProfileOptions":
        """From keywords, as ``nnprofile.profile`` takes them; an unknown keyword is a TypeError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(
                "unexpected option%s %s (options: %s)"
                % ("s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(sorted(known)))
            )
        return cls(**settings)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ProfileOptions":
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)})

    @classmethod
    def add_arguments(
        cls,
        parser: Any,
        names: Optional[Iterable[str]] = None,
        suffix: str = "",
        defaults: Optional[Dict[str, Any]] = None,
    ) -> None:
        """Add every option (or those ``names``) to an argparse parser; ``defaults``: the parser's own."""
        wanted = set(names) if names is not None else None
        for f in fields(cls):
            if wanted is None or f.name in wanted:
                add_field(parser, f, suffix, (defaults or {}).get(f.name, MISSING))

    def argv(self) -> List[str]:
        """The command-line arguments that give a fresh process these options (``--repeat``)."""
        return [x for f in fields(self) if f.metadata["fresh"] for x in field_argv(f, getattr(self, f.name))]

    def changed(self, **changes: Any) -> "ProfileOptions":
        return replace(self, **changes)


def configurable() -> Dict[str, "Field[Any]"]:
    """The keys of ``compare --set`` and their fields."""
    return {f.name: f for f in fields(ProfileOptions) if f.metadata["configurable"]}
