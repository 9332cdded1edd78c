"""The project's own dataset cache: read as NNabla reads it where it can stand for its CSV, never written."""

import os

import numpy as np
import pytest

from nnprofile.project.data import DatasetSource, project_cache
from nnprofile.project.loader import DatasetSpec


def _dataset(tmp_path, rows=30):
    csv = tmp_path / "data.csv"
    rng = np.random.RandomState(0)
    csv.write_text("x,y\n" + "".join("%f,%d\n" % (rng.rand(), i % 3) for i in range(rows)))
    return csv


def _cache(csv, folder):
    from nnabla.utils.create_cache import CreateCache

    os.makedirs(folder)
    CreateCache(str(csv), rng=np.random.RandomState(0), shuffle=False).create(str(folder), normalize=False)
    stamp = os.stat(csv).st_mtime_ns + 10**9  # written after the CSV, whatever the file system's resolution
    for name in os.listdir(folder):
        os.utime(os.path.join(folder, name), ns=(stamp, stamp))


def _spec(csv, cache_dir, **kw):
    return DatasetSpec(
        name="Training",
        uri=csv.name,
        path=str(csv),
        batch_size=4,
        shuffle=False,
        normalize=False,
        index=0,
        cache_dir=str(cache_dir),
        **kw,
    )


def _state(folder):
    return {n: os.stat(os.path.join(folder, n)).st_mtime_ns for n in os.listdir(folder)}


def test_a_complete_project_cache_is_read_and_left_as_it_was(tmp_path):
    csv = _dataset(tmp_path)
    cache = tmp_path / "data.cache"
    _cache(csv, cache)
    before = _state(cache)
    out = tmp_path / "out"
    source = DatasetSource(_spec(csv, cache), str(out))
    batches = [source.next() for _ in range(10)]
    source.close()
    assert source.project_cache == str(cache)
    assert [sorted(b) for b in batches[:1]] == [["x", "y"]]
    assert _state(cache) == before  # read, not written
    assert not out.exists()  # no cache of nnprofile's own


@pytest.mark.parametrize("damage", ["csv newer", "file missing", "rows differ", "overwrite_cache", "no index"])
def test_a_project_cache_that_cannot_stand_for_its_csv_is_not_read(tmp_path, damage):
    csv = _dataset(tmp_path)
    cache = tmp_path / "data.cache"
    _cache(csv, cache)
    kw = {}
    if damage == "csv newer":
        later = os.stat(cache / "cache_index.csv").st_mtime_ns + 10**9
        os.utime(csv, ns=(later, later))
    elif damage == "file missing":
        os.remove(cache / sorted(n for n in os.listdir(cache) if n.startswith("cache_0"))[0])
    elif damage == "rows differ":
        with open(csv, "a") as f:
            f.write("0.5,1\n")
        os.utime(csv, ns=(0, 0))
    elif damage == "overwrite_cache":
        kw["overwrite_cache"] = True
    else:
        os.remove(cache / "cache_index.csv")
    spec = _spec(csv, cache, **kw)
    assert project_cache(spec) is None
    out = tmp_path / "out"
    source = DatasetSource(spec, str(out))
    source.next()
    source.close()
    assert source.project_cache is None and (out / "Training").is_dir()  # its own, in the output folder


def _opened(csv, tmp_path):
    return DatasetSource(_spec(csv, tmp_path / "no-cache"), str(tmp_path / "out"))


def test_a_dataset_that_is_no_csv_is_refused_naming_the_file_never_quoting_it(tmp_path):
    """A project's dataset pointed at a file of secrets (``../../etc/passwd``): NNabla would take its lines for file
    names and quote one in its error; the message names the file and the line, nothing of what it holds."""
    from nnprofile.base.errors import ProfileError

    secrets = tmp_path / "secrets.txt"
    secrets.write_text("user=alice\napi_token=SECRET-abc123\n")
    with pytest.raises(ProfileError) as e:
        _opened(secrets, tmp_path)
    assert "SECRET" not in str(e.value) and "alice" not in str(e.value)
    assert str(secrets) in str(e.value) and "line 2, column 1" in str(e.value)


def test_a_csv_naming_a_fifo_is_refused_before_anything_reads_it(tmp_path):
    """A cell naming a FIFO once hung NNabla's cache maker forever: it is refused in one line, unopened."""
    from nnprofile.base.errors import ProfileError

    os.mkfifo(tmp_path / "image.png")
    csv = tmp_path / "data.csv"
    csv.write_text("x:image,y\nimage.png,1\n")
    with pytest.raises(
        ProfileError, match="line 2, column 1: the file it names is a named pipe \\(FIFO\\), not a file to read"
    ):
        _opened(csv, tmp_path)


@pytest.mark.parametrize("text, says", [("", "is empty"), ("x,y\n", "holds a header and no data row")])
def test_an_empty_csv_is_one_line(tmp_path, text, says):
    from nnprofile.base.errors import ProfileError

    csv = tmp_path / "data.csv"
    csv.write_text(text)
    with pytest.raises(ProfileError, match=says):
        _opened(csv, tmp_path)
