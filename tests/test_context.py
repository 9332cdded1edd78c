"""Choosing the context: the project's request, command-line overrides, the CPU fallback,
and the CUDA path's device synchronisation, driven by a fake extension module."""

import pytest

from nnprofile.project import context
from nnprofile.base.errors import ProfileError
from nnprofile.render import notes
from nnprofile.result.notes import Note


class Proto:
    def __init__(self, backends=(), backend="", compute_backend="", device_id=""):
        self.backends = list(backends)
        self.backend = backend
        self.compute_backend = compute_backend
        self.device_id = device_id


def test_project_request_new_style():
    assert context.project_request(Proto(["cudnn:float", "cuda:float", "cpu:float"], device_id="1")) == (
        "cudnn",
        "float",
        "1",
    )
    assert context.project_request(Proto(["cpu:half"])) == ("cpu", "half", "0")
    assert context.project_request(Proto(["tpu:float"])) == ("cpu", "float", "0")


def test_project_request_old_style_as_in_2017_projects():
    assert context.project_request(Proto(backend="cpu|cuda", compute_backend="default|cudnn")) == (
        "cudnn",
        "float",
        "0",
    )
    assert context.project_request(Proto(backend="cpu|cuda", compute_backend="default")) == ("cuda", "float", "0")
    assert context.project_request(Proto(backend="cpu", compute_backend="default")) == ("cpu", "float", "0")


class FakeExtension:
    def __init__(self):
        self.synchronized = []

    def synchronize(self, device_id):
        self.synchronized.append(device_id)


@pytest.fixture
def fake_cuda(monkeypatch):
    """nnabla-ext-cuda as NNabla's extension API presents it, without a GPU."""
    import nnabla.ext_utils

    ext = FakeExtension()
    monkeypatch.setattr(context, "extension_available", lambda backend: True)
    monkeypatch.setattr(nnabla.ext_utils, "import_extension_module", lambda name: ext)
    monkeypatch.setattr(
        nnabla.ext_utils,
        "get_extension_context",
        lambda name, device_id="0", type_config="float": ("ctx", name, device_id, type_config),
    )
    return ext


def test_cudnn_context_synchronises_the_device_it_runs_on(fake_cuda):
    rc = context.resolve("cudnn", "float", "1")
    assert (rc.backend, rc.type_config, rc.description) == ("cudnn", "float", "cudnn:float")
    assert rc.nnabla_context == ("ctx", "cudnn", "1", "float")
    assert rc.notes == []
    rc.synchronize()
    assert fake_cuda.synchronized == ["1"]


def test_type_config_override_on_cuda(fake_cuda):
    rc = context.resolve("cudnn", "float", "0", backend="cuda", type_config="half")
    assert rc.nnabla_context == ("ctx", "cuda", "0", "half")
    assert rc.requested == "cuda:half"


def test_cpu_needs_no_synchronisation():
    rc = context.resolve("cpu", "float", "0")
    assert rc.synchronize is None and rc.notes == []


def test_a_projects_gpu_request_falls_back_to_the_cpu_with_one_note(monkeypatch):
    monkeypatch.setattr(context, "extension_available", lambda backend: backend == "cpu")
    rc = context.resolve("cudnn", "float", "0")
    assert rc.backend == "cpu" and rc.synchronize is None
    assert rc.notes == [Note("backend_missing", {"backend": "cuDNN"})]
    assert notes.texts(rc.notes) == [
        "the project asks for cuDNN, but nnabla-ext-cuda is not installed: running on the CPU"
    ]


def test_an_explicit_gpu_request_without_the_extension_is_an_error(monkeypatch):
    monkeypatch.setattr(context, "extension_available", lambda backend: backend == "cpu")
    with pytest.raises(ProfileError, match="needs nnabla-ext-cuda"):
        context.resolve("cpu", "float", "0", backend="cudnn")
    with pytest.raises(ProfileError, match="unknown type config"):
        context.resolve("cpu", "double", "0")
