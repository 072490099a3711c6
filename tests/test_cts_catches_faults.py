"""The CTS can fail: drivers with planted faults (tests/broken_drivers.py) fail the tests
that exercise the fault, and only those; the sample driver passes the same selection."""
import pytest

from tests.cts_run import run_cts

SELECTION = ["-k", "V1_0 or V1_1"]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    code, records, out = run_cts(tmp_path_factory.mktemp("sample"), "--driver", "sample", *SELECTION)
    assert code == 0, out[-3000:]
    return records


def test_sample_driver_passes_every_fl1_fl2_model(baseline):
    # 333 V1_0 + 474 V1_1 models (counts from the corpus INDEX.json)
    assert len(baseline) == 807
    assert {r["outcome"] for r in baseline.values()} == {"passed"}


def test_off_by_two_quanta_in_add_is_caught(tmp_path, baseline):
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:OffByTwoQuantaAdd", *SELECTION)
    assert code == 1
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    assert {"V1_0/add_quant8/add_quant8",
            "V1_0/add_broadcast_quant8/add_broadcast_quant8"} <= failed
    assert records["V1_0/add/add"]["outcome"] == "passed"  # float ADD is untouched
    assert all("ADD" in records[i]["operations"] for i in failed)
    assert "elements off" in records["V1_0/add_quant8/add_quant8"]["message"]


def test_dropped_fused_activation_is_caught(tmp_path, baseline):
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:DropsFusedActivation", *SELECTION)
    assert code == 1
    failed = {i for i, r in records.items() if r["outcome"] == "failed"}
    # these corpus models use RELU / RELU1 / RELU6 fused activations that clip real values
    assert {"V1_0/conv_float_2/conv_float_2", "V1_0/fully_connected_float_2/fully_connected_float_2",
            "V1_0/max_pool_float_3/max_pool_float_3", "V1_0/avg_pool_float_4/avg_pool_float_4",
            "V1_0/max_pool_quant8_3/max_pool_quant8_3"} <= failed
    assert records["V1_0/conv_float_channels/conv_float_channels"]["outcome"] == "passed"  # FuseCode NONE


def test_expect_failure_models_must_fail(tmp_path):
    # V1_3_cts_only holds expect_failure validation models; sample rejects them -> pass;
    # any that is not skipped must pass only by failing somewhere from finish to compute.
    code, records, out = run_cts(tmp_path, "-k", "concat_invalid_rank or strided_slice_invalid")
    judged = [r for r in records.values() if r["outcome"] != "skipped"]
    assert judged and all(r["outcome"] == "passed" for r in judged), out[-2000:]


@pytest.mark.parametrize("driver,modes,failing_mode,fragment", [
    ("TimingNotMeasured", "sync,burst", "sync", "timing was requested but not reported"),
    ("LostAsyncCallback", "sync,async", "async", "never notified the execution callback"),
    ("WrongOutputShape", "sync,dynamic", "dynamic", "dimensions [2, 2, 2, 1], expected [1, 2, 2, 1]"),
    ("CacheAcceptsCorruption", "sync,cache", "cache", "after a foreign cache"),
])
def test_execution_seam_faults_are_caught(tmp_path, driver, modes, failing_mode, fragment):
    code, records, out = run_cts(tmp_path, "--driver", f"tests.broken_drivers:{driver}", "--mode", modes,
                                 "--wait-limit", "0.5", "-k", "V1_0 and relu_float_1")
    assert code == 1, out[-2000:]
    by_mode = {}
    for r in records.values():
        by_mode.setdefault(r["mode"], []).append(r)
    assert failing_mode in by_mode
    failed = [r for r in by_mode[failing_mode] if r["outcome"] == "failed"]
    assert len(failed) == len(by_mode[failing_mode]) == 2  # relu_float_1 and its internal-inputs twin
    assert all(fragment in r["message"] for r in failed), failed[0]["message"]
    if driver == "LostAsyncCallback":  # every other path still works
        assert all(r["outcome"] == "passed" for r in by_mode["sync"])
