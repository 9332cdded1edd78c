"""Speed against accuracy: train a configuration with NNabla's own training loop.

``nnabla_cli train`` runs the project's optimizer, solver and monitors. It
runs on a copy of the project, written into the run's folder, with the
configuration applied (context and precision, batch size), ``max_epoch`` set,
and dataset paths made absolute with their caches inside the run's folder,
so that nothing is written beside the user's files.

Two figures of accuracy come back: the project's own ``valid_error`` monitor
(for an "Error" monitor on a loss, NNabla averages the loss itself), and the
classification error of the trained network on the validation dataset,
computed here when the executor's output is a score per class.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from ..base.errors import ProfileError
from ..project.loader import validation_datasets

EPOCH_LINE = re.compile(r"epoch (\d+) of (\d+) .*time=\(([\d.]+)s /([\d.]+)s\)")


@dataclass
class TrainingRun:
    epochs: int
    train_seconds: float  # NNabla's own elapsed time at the last epoch
    wall_seconds: float  # the whole command, start-up included
    monitor_valid_error: Optional[float]  # the project's valid_error monitor, last epoch
    classification_error: Optional[float]  # 1 - accuracy on the validation dataset


def training_project(proto_text: str, folder: str, run_dir: str, epochs: int, settings: Dict[str, str]) -> str:
    """Write the adjusted copy of the project into run_dir; return its path."""
    from google.protobuf import text_format
    from nnabla.utils import nnabla_pb2

    proto = nnabla_pb2.NNablaProtoBuf()
    text_format.Merge(proto_text, proto)
    proto.training_config.max_epoch = epochs
    backend = settings.get("context")
    type_config = settings.get("type_config")
    if backend or type_config:
        ctx = proto.global_config.default_context
        current = list(ctx.backends) or ["cpu:float"]
        name = backend or current[0].split(":")[0]
        tc = type_config or (current[0].split(":") + ["float"])[1]
        chain = {"cudnn": ["cudnn", "cuda", "cpu"], "cuda": ["cuda", "cpu"], "cpu": ["cpu"]}[name]
        del ctx.backends[:]
        ctx.backends.extend("%s:%s" % (b, tc) for b in chain)
        ctx.array_class = "CudaCachedArray" if name != "cpu" else "CpuCachedArray"
    if "batch_size" in settings:
        size = int(settings["batch_size"])
        for net in proto.network:
            net.batch_size = size
        for d in proto.dataset:
            d.batch_size = size
    for d in proto.dataset:
        if "://" not in d.uri and not os.path.isabs(d.uri):
            d.uri = os.path.normpath(os.path.join(folder, d.uri))
        if not os.path.isfile(d.uri):
            raise ProfileError("dataset '%s': cannot read '%s'; training needs the real dataset" % (d.name, d.uri))
        d.cache_dir = os.path.join(run_dir, "cache", d.name)
        d.create_cache_explicitly = True
        d.overwrite_cache = False
    path = os.path.join(run_dir, "train.nntxt")
    with open(path, "w") as f:
        f.write(text_format.MessageToString(proto))
    return path


def _last_monitor(report_path: str, name: str) -> Optional[float]:
    try:
        import yaml

        with open(report_path) as f:
            report = yaml.safe_load(f) or {}
    except (OSError, ValueError, ImportError):
        return None
    if not report:
        return None
    last = report[max(report)]
    value = last.get(name) if isinstance(last, dict) else None
    return float(value) if value is not None else None


def classification_error(
    nnp_path: str, settings: Dict[str, str], dataset_paths: List[str], cache_dir: str
) -> Optional[float]:
    """1 - accuracy of the trained executor on the validation data, or None if its output is not class scores."""
    from ..project import DatasetSpec, load_project
    from ..project.data import DatasetSource, MultiSource

    project = load_project(
        [nnp_path],
        backend="cpu" if settings.get("context") in (None, "cpu") else settings["context"],
        type_config=settings.get("type_config"),
    )
    if not project.executors:
        return None
    executor = next(iter(project.executors.values()))
    outputs = list(executor.output_assign.keys())
    inputs = list(executor.dataset_assign.items())
    if len(outputs) != 1 or len(inputs) != 1:
        return None
    out = outputs[0].variable_instance
    if len(out.shape) != 2 or out.shape[1] < 2:
        return None
    batch = out.shape[0]
    source = MultiSource(
        [
            DatasetSource(
                DatasetSpec(
                    name="validation%d" % i,
                    uri=path,
                    path=path,
                    batch_size=batch,
                    shuffle=False,
                    normalize=True,
                    index=0,
                ),
                cache_dir,
            )
            for i, path in enumerate(dataset_paths)
        ]
    )
    try:
        label = [v for s in source.sources for v in s.variables if v != inputs[0][1]]
        if not label:
            return None
        total = min(s.size for s in source.sources)
        wrong = seen = 0
        while seen < total:
            data = source.next()
            inputs[0][0].variable_instance.d = data[inputs[0][1]]
            executor.forward_target.forward(clear_buffer=True)
            predicted = np.argmax(out.d, axis=1)
            truth = data[label[0]].reshape(-1).astype(int)
            take = min(batch, total - seen)
            wrong += int(np.sum(predicted[:take] != truth[:take]))
            seen += take
        return wrong / total
    finally:
        source.close()


def train_once(project_file: str, settings: Dict[str, str], epochs: int, run_dir: str) -> TrainingRun:
    """Train one configuration with `nnabla_cli train`; return time and error."""
    if os.path.splitext(project_file)[1].lower() not in (".nntxt", ".prototxt"):
        raise ProfileError("--train-epochs needs an .nntxt project")
    run_dir = os.path.abspath(run_dir)  # nnabla_cli runs in it: a relative path would be read from there
    os.makedirs(run_dir, exist_ok=True)
    with open(project_file) as f:
        text = f.read()
    folder = os.path.dirname(os.path.abspath(project_file))
    nntxt = training_project(text, folder, run_dir, epochs, settings)
    out_dir = os.path.join(run_dir, "train")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    # nnabla_cli's own module, run by this Python: no assumption about where scripts are installed.
    proc = subprocess.run(
        [sys.executable, "-m", "nnabla.utils.cli.cli", "train", "-c", nntxt, "-o", out_dir],
        capture_output=True,
        text=True,
        cwd=run_dir,
    )
    wall = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    with open(os.path.join(run_dir, "train.log"), "w") as f:
        f.write(log)
    epochs_seen = EPOCH_LINE.findall(log)
    if proc.returncode != 0 or not epochs_seen or "Training Completed" not in log:
        raise ProfileError("training failed (see %s)" % os.path.join(run_dir, "train.log"))
    train_seconds = float(epochs_seen[-1][2])
    monitor = _last_monitor(os.path.join(out_dir, "monitoring_report.yml"), "valid_error")
    nnp = os.path.join(out_dir, "results.nnp")
    error = None
    valid = _validation_uris(nntxt)
    if os.path.isfile(nnp) and valid:
        error = classification_error(nnp, settings, valid, os.path.join(run_dir, "cache", "evaluation"))
    return TrainingRun(
        epochs=len(epochs_seen),
        train_seconds=train_seconds,
        wall_seconds=wall,
        monitor_valid_error=monitor,
        classification_error=error,
    )


def _validation_uris(nntxt: str) -> List[str]:
    """The validation datasets' files, chosen as the profile chooses them (``validation_datasets``)."""
    from google.protobuf import text_format
    from nnabla.utils import nnabla_pb2

    proto = nnabla_pb2.NNablaProtoBuf()
    with open(nntxt) as f:
        text_format.Merge(f.read(), proto)
    by_name = {d.name: d.uri for d in proto.dataset}
    return [by_name[name] for name in validation_datasets(proto) if name in by_name]
