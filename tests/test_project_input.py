"""A project's files are data: a loop repeated beyond what memory holds, a damaged parameter file, an archive member
that cannot be read, a batch too large are each one line naming the figure or the file (exit 2), before NNabla
allocates anything; a parameter file that gave no parameter is said beside the profile."""

import os
import zipfile

import pytest

from conftest import LENET, ROOT, run_cli
from nnprofile.base.errors import ProfileError
from nnprofile.compare.configs import parse_set
from nnprofile.project.sizes import check_unrolled

REPEAT = os.path.join(ROOT, "tests", "projects", "repeat.nntxt")


def _proto(path):
    from google.protobuf import text_format
    from nnabla.utils import nnabla_pb2

    with open(path, encoding="utf-8") as f:
        return text_format.Merge(f.read(), nnabla_pb2.NNablaProtoBuf())


def test_a_loop_repeated_beyond_what_a_project_holds_is_refused_before_anything_is_built():
    proto = _proto(REPEAT)
    check_unrolled(proto, "repeat.nntxt", None, memory=1 << 30)  # 3 times: as it is
    proto.network[0].repeat_info[0].times = 100_000_000
    with pytest.raises(ProfileError, match="unrolls to 300000005 functions \\(loop 'RepeatStart' repeats 100000000"):
        check_unrolled(proto, "repeat.nntxt", None, memory=1 << 30)
    proto.network[0].repeat_info[0].times = 3
    proto.network[0].variable[0].shape.dim[1] = 1 << 40
    with pytest.raises(ProfileError, match="network 'Main' would take .* more than this machine has"):
        check_unrolled(proto, "repeat.nntxt", None, memory=1 << 30)


@pytest.mark.slow
def test_a_repeat_of_a_hundred_million_is_one_line_at_once(tmp_path):
    text = open(REPEAT, encoding="utf-8").read().replace("times: 3", "times: 100000000")
    (tmp_path / "big.nntxt").write_text(text)
    proc = run_cli(str(tmp_path / "big.nntxt"), "--synthetic", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "repeats 100000000 times" in proc.stderr


@pytest.mark.slow
def test_a_parameter_file_that_gives_no_parameter_is_said(tmp_path):
    nnp = tmp_path / "damaged.nnp"
    with zipfile.ZipFile(nnp, "w") as z:
        z.write(LENET, "network.nntxt")
        z.writestr("parameter.protobuf", b"\0" * 4096)
    proc = run_cli(str(nnp), "-q", "--synthetic", "--max-seconds", "0.3", "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "nnprofile: warning: the parameter files (%s!parameter.protobuf) gave 0 of the" % nnp in proc.stderr
    assert "the values are not the project's" in (tmp_path / "out" / "profile.log").read_text()


@pytest.mark.slow
def test_an_archive_member_that_cannot_be_read_is_named(tmp_path):
    nnp = tmp_path / "damaged.nnp"
    with zipfile.ZipFile(nnp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("network.nntxt", open(LENET, encoding="utf-8").read())
    data = bytearray(nnp.read_bytes())
    at = data.index(b"network.nntxt") + len("network.nntxt") + 40  # inside the member's compressed data
    data[at : at + 8] = b"\xff" * 8
    nnp.write_bytes(bytes(data))
    proc = run_cli(str(nnp), "--synthetic", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and "its member 'network.nntxt' cannot be read" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_a_batch_too_large_says_so_and_a_key_set_twice_is_refused():
    proc = run_cli(LENET, "--batch-size", "1" + "0" * 30, "--synthetic")
    assert proc.returncode == 2 and "is larger than any (at most 2147483647)" in proc.stderr
    assert "whole number of 1 or more" not in proc.stderr
    with pytest.raises(ProfileError, match="batch_size is given twice"):
        parse_set("batch_size=16,batch_size=32")
