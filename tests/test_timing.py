import json

import pytest
import torch

from kernelbench import timing


def test_unknown_method_lists_accepted():
    with pytest.raises(ValueError, match="cuda_event"):
        timing.get_timing_function("nope")


def test_stats_round_to_three_significant_figures():
    s = timing.get_timing_stats([1.23456, 2.34567, 3.45678])
    assert s == {"mean": 2.35, "std": 0.907, "min": 1.23, "max": 3.46, "num_trials": 3}
    s = timing.get_timing_stats([1.0], device="cpu")
    assert s["device"] == "cpu" and "hardware" in s


def test_host_time_on_cpu_counts_trials():
    calls = []

    def fn(x):
        calls.append(1)
        return x + 1

    times = timing.get_timing_function("host_time")(fn, [torch.ones(4)], num_warmup=2, num_trials=5,
                                                     discard_first=1, verbose=False, device="cpu")
    assert len(times) == 5 and all(t >= 0 for t in times)
    assert len(calls) == 2 + 5 + 1


@pytest.mark.parametrize("method", ["cuda_event", "do_bench", "do_bench_impl"])
def test_gpu_methods_refuse_cpu(method):
    with pytest.raises(ValueError, match="CUDA"):
        timing.get_timing_function(method)(lambda: None, [], device="cpu")


def test_measure_ref_program_time_cpu(demo_problem):
    stats = timing.measure_ref_program_time("1_Elementwise_add.py", demo_problem(1, "1_Elementwise_add.py"),
                                            num_warmup=1, num_trials=3, device="cpu")
    assert stats["num_trials"] == 3 and stats["mean"] > 0


def test_fetch_baseline_time_matches_names_with_or_without_py(tmp_path):
    class P:
        name = "1_Elementwise_add"

    class DS:
        def get_problem_by_id(self, pid):
            return P()

    f = tmp_path / "b.json"
    f.write_text(json.dumps({"level1": {"1_Elementwise_add.py": {"mean": 1.0}}}))
    assert timing.fetch_baseline_time("level1", 1, DS(), f) == {"mean": 1.0}


@pytest.mark.gpu
def test_l2_flush_is_at_least_twice_l2():
    props = torch.cuda.get_device_properties(0)
    assert timing.l2_flush_bytes(0) >= 2 * props.L2_cache_size
    times = timing.get_timing_function("cuda_event")(lambda a: a * 2, [torch.ones(1 << 20, device="cuda")],
                                                     num_trials=5, verbose=False, device="cuda:0")
    assert len(times) == 5 and all(t > 0 for t in times)
