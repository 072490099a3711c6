"""The sample driver's compilation-cache HAL calls directly (IDevice ``prepareModel`` with
cache files, ``prepareModelFromCache``; runtime/drivers/sample_cache.py): the round trip,
wrong file counts and unwritable files, bad arguments, unreadable files, every truncation
and bit flip of its cache files, and the model validation a cache does not bypass."""
from __future__ import annotations

import io

import pytest

from runtime.drivers import sample_cache
from runtime.drivers.sample import SampleDevice, SamplePreparedModel
from runtime.errors import HalError
from runtime.testing.hal_convert import read_outputs, to_hal_model, to_hal_request
from runtime.types import ErrorStatus
from tests.caching_support import TOKEN, corpus_model, mismatches


BAD_CACHE = (ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT)


def _prepared_cache(tm=None):
    model = to_hal_model(tm or corpus_model("fully_connected_float_2"))
    mc, dc = io.BytesIO(), io.BytesIO()
    SampleDevice().prepare_model(model, model_cache=[mc], data_cache=[dc], token=TOKEN)
    return model, mc, dc


def test_hal_prepare_from_cache_round_trip():
    tm = corpus_model("fully_connected_float_2")
    _, mc, dc = _prepared_cache(tm)
    mc.seek(7)  # the driver reads from position 0 whatever the position
    prepared = SampleDevice().prepare_model_from_cache(None, [mc], [dc], TOKEN)
    request = to_hal_request(tm)
    shapes, _ = prepared.execute_synchronously(request)
    outs = read_outputs(tm, request, shapes)
    assert mismatches(tm, outs) == []


def test_hal_prepare_truncates_old_cache_content():
    model = to_hal_model(corpus_model("add"))
    mc, dc = io.BytesIO(b"x" * 100000), io.BytesIO(b"y" * 1000)
    SampleDevice().prepare_model(model, model_cache=[mc], data_cache=[dc], token=TOKEN)
    expected_model, expected_data = sample_cache.encode(model, TOKEN)
    assert mc.getvalue() == expected_model and dc.getvalue() == expected_data


@pytest.mark.parametrize("counts", [(0, 1), (1, 0), (2, 1), (1, 2), (0, 0)])
def test_hal_prepare_with_wrong_file_counts_succeeds_without_writing(counts):
    model = to_hal_model(corpus_model("add"))
    mcs = [io.BytesIO() for _ in range(counts[0])]
    dcs = [io.BytesIO() for _ in range(counts[1])]
    prepared = SampleDevice().prepare_model(model, model_cache=mcs, data_cache=dcs, token=TOKEN)
    assert isinstance(prepared, SamplePreparedModel)
    assert all(f.getvalue() == b"" for f in mcs + dcs)


def test_hal_prepare_with_unwritable_files_still_succeeds(tmp_path):
    model = to_hal_model(corpus_model("add"))
    (tmp_path / "m").write_bytes(b"old")
    (tmp_path / "d").write_bytes(b"old")
    with open(tmp_path / "m", "rb") as mc, open(tmp_path / "d", "rb") as dc:
        prepared = SampleDevice().prepare_model(model, model_cache=[mc], data_cache=[dc], token=TOKEN)
    assert isinstance(prepared, SamplePreparedModel)


@pytest.mark.parametrize("args", [
    "no model file", "no data file", "two model files", "two data files", "short token", "long token",
    "token str", "files not a list"])
def test_hal_prepare_from_cache_rejects_bad_arguments(args):
    _, mc, dc = _prepared_cache()
    call = {"no model file": ([], [dc], TOKEN), "no data file": ([mc], [], TOKEN),
            "two model files": ([mc, mc], [dc], TOKEN), "two data files": ([mc], [dc, dc], TOKEN),
            "short token": ([mc], [dc], TOKEN[:31]), "long token": ([mc], [dc], TOKEN + b"\0"),
            "token str": ([mc], [dc], "x" * 32), "files not a list": (mc, dc, TOKEN)}[args]
    with pytest.raises(HalError) as e:
        SampleDevice().prepare_model_from_cache(None, *call)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT


def test_hal_prepare_from_cache_rejects_unreadable_files(tmp_path):
    _, mc, dc = _prepared_cache()
    (tmp_path / "m").write_bytes(mc.getvalue())
    with open(tmp_path / "m", "wb") as write_only:
        with pytest.raises(HalError) as e:
            SampleDevice().prepare_model_from_cache(None, [write_only], [dc], TOKEN)
    assert e.value.status in BAD_CACHE
    closed = io.BytesIO(mc.getvalue())
    closed.close()
    with pytest.raises(HalError):
        SampleDevice().prepare_model_from_cache(None, [closed], [dc], TOKEN)
    with pytest.raises(HalError):
        SampleDevice().prepare_model_from_cache(None, [object()], [dc], TOKEN)


def test_hal_prepare_from_cache_rejects_every_truncation():
    _, mc, dc = _prepared_cache(corpus_model("add"))
    model_file, data_file = mc.getvalue(), dc.getvalue()
    device = SampleDevice()
    for n in range(len(model_file)):
        with pytest.raises(HalError) as e:
            device.prepare_model_from_cache(None, [io.BytesIO(model_file[:n])], [io.BytesIO(data_file)], TOKEN)
        assert e.value.status in BAD_CACHE
    for n in range(len(data_file)):
        with pytest.raises(HalError) as e:
            device.prepare_model_from_cache(None, [io.BytesIO(model_file)], [io.BytesIO(data_file[:n])], TOKEN)
        assert e.value.status in BAD_CACHE


def test_hal_prepare_from_cache_rejects_every_bit_flip():
    _, mc, dc = _prepared_cache(corpus_model("add"))
    model_file, data_file = mc.getvalue(), dc.getvalue()
    device = SampleDevice()
    for which, blob in (("model", model_file), ("data", data_file)):
        for i in range(len(blob)):
            bad = bytearray(blob)
            bad[i] ^= 1 << (i % 8)
            files = ([io.BytesIO(bytes(bad))], [io.BytesIO(data_file)]) if which == "model" else \
                ([io.BytesIO(model_file)], [io.BytesIO(bytes(bad))])
            with pytest.raises(HalError) as e:
                device.prepare_model_from_cache(None, *files, TOKEN)
            assert e.value.status in BAD_CACHE, (which, i)


def test_hal_prepare_from_cache_validates_the_model():
    """A cache with good digests holding a model this device cannot run is still rejected."""
    model = to_hal_model(corpus_model("add"))
    model.main.operands[0].number_of_consumers += 1  # invalid
    model_file, data_file = sample_cache.encode(model, TOKEN)
    with pytest.raises(HalError) as e:
        SampleDevice().prepare_model_from_cache(None, [io.BytesIO(model_file)], [io.BytesIO(data_file)], TOKEN)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    fl2 = to_hal_model(corpus_model("batch_to_space", "V1_1"))  # BATCH_TO_SPACE_ND: feature level 2
    model_file, data_file = sample_cache.encode(fl2, TOKEN)
    assert SampleDevice().prepare_model_from_cache(None, [io.BytesIO(model_file)], [io.BytesIO(data_file)], TOKEN)
    with pytest.raises(HalError, match="unsupported"):
        SampleDevice(feature_level=1).prepare_model_from_cache(
            None, [io.BytesIO(model_file)], [io.BytesIO(data_file)], TOKEN)
