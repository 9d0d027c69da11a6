"""Off-mode evaluator on the CPU: upstream semantics plus the fixed upstream bugs."""

import torch

from kernelbench.eval import (
    KernelExecResult,
    _process_input_tensor,
    eval_kernel_against_ref,
    get_tolerance_for_precision,
    get_torch_dtype_from_string,
    load_original_model_and_inputs,
    ReferenceLoadError,
)

import pytest

WRONG = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        return torch.zeros_like(a[0])\n"
RAISES = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        raise RuntimeError('boom')\n"
SYNTAX = "import torch\nclass ModelNew(torch.nn.Module:\n"
NO_MODEL = "import torch\n"


def _eval(ref, cand, **kw):
    kw.setdefault("device", "cpu")
    kw.setdefault("num_correct_trials", 2)
    return eval_kernel_against_ref(ref, cand, **kw)


def test_correct_candidate_passes_and_is_timed(demo_problem, demo_solution):
    ref = demo_problem(1, "2_GELU_activation.py")
    r = _eval(ref, demo_solution(1, "2_GELU_activation.py"), measure_performance=True, num_perf_trials=3)
    assert isinstance(r, KernelExecResult)
    assert r.compiled and r.correctness
    assert r.metadata["correctness_trials"] == "(2 / 2)"
    assert r.runtime > 0 and r.runtime_stats["num_trials"] == 3
    assert r.metadata["timing_method_used"] == "host_time"  # cuda_event is replaced on the CPU
    assert "tf32" not in r.metadata  # recorded for CUDA runs only


@pytest.mark.gpu
def test_cuda_record_says_which_tf32_switches_the_candidate_ran_under(demo_problem):
    """The analysis compares them with the baseline's (``tf32_mismatch``): PyTorch's defaults as found."""
    ref = demo_problem(1, "2_GELU_activation.py")
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True
        r = _eval(ref, ref + "\nModelNew = Model\n", device="cuda:0")  # no build: the reference itself
        assert r.correctness and r.metadata["tf32"] == {"matmul": False, "cudnn": True}
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def test_wrong_candidate_records_mismatch(demo_problem):
    r = _eval(demo_problem(1, "2_GELU_activation.py"), WRONG, measure_performance=True)
    assert r.compiled and not r.correctness
    assert r.metadata["correctness_issue"] == "Output mismatch"
    assert len(r.metadata["max_difference"]) == 2
    assert r.runtime == -1.0  # not timed when incorrect


def test_raising_candidate_is_runtime_error(demo_problem):
    r = _eval(demo_problem(1, "2_GELU_activation.py"), RAISES)
    assert r.compiled and not r.correctness
    assert "boom" in r.metadata["runtime_error"]
    assert r.metadata["runtime_error_name"] == "builtins.RuntimeError"


@pytest.mark.parametrize("src", [SYNTAX, NO_MODEL])
def test_unloadable_candidate_is_not_compiled(demo_problem, src):
    r = _eval(demo_problem(1, "2_GELU_activation.py"), src)
    assert r is not None and not r.compiled and not r.correctness
    assert "compilation_error" in r.metadata


def test_candidate_cannot_rebind_reference_constants(demo_problem, demo_solution):
    """Upstream hole 1: a candidate setting the size constant shrank the reference's inputs."""
    ref = demo_problem(1, "1_Elementwise_add.py")
    cand = "batch_size = 1\ndim = 1\n" + demo_solution(1, "1_Elementwise_add.py")
    r = _eval(ref, cand)
    assert r.correctness
    ctx = {}
    load_original_model_and_inputs(ref, ctx)
    assert ctx["batch_size"] != 1


def test_integer_inputs_keep_their_dtype(demo_problem, demo_solution):
    t = _process_input_tensor(torch.tensor([1, 2]), "cpu", precision=torch.float16)
    assert t.dtype == torch.int64
    f = _process_input_tensor(torch.tensor([1.0]), "cpu", precision=torch.float16)
    assert f.dtype == torch.float16
    r = _eval(demo_problem(1, "8_Cross_entropy_loss.py"), demo_solution(1, "8_Cross_entropy_loss.py"))
    assert r.correctness  # int64 targets reach cross_entropy unchanged (upstream #151)


def test_reference_errors_raise_instead_of_returning_none():
    with pytest.raises(ReferenceLoadError):
        load_original_model_and_inputs("def broken(:\n")
    r = eval_kernel_against_ref("def broken(:\n", WRONG, device="cpu")
    assert not r.compiled and "reference_error" in r.metadata


def test_precision_helpers():
    assert get_torch_dtype_from_string("FP16") == torch.float16
    assert get_tolerance_for_precision("fp32") == 1e-4
    assert get_tolerance_for_precision("bf16") == 1e-2
    with pytest.raises(ValueError):
        get_torch_dtype_from_string("fp8")


def test_trial_seeds_follow_upstream(demo_problem, demo_solution):
    """The same seed gives the same trial inputs (deterministic, upstream RNG order)."""
    a = _eval(demo_problem(1, "5_Square_matmul.py"), demo_solution(1, "5_Square_matmul.py"), num_correct_trials=3)
    b = _eval(demo_problem(1, "5_Square_matmul.py"), demo_solution(1, "5_Square_matmul.py"), num_correct_trials=3)
    assert a.correctness and b.correctness


def test_level2_weights_match_under_seeded_construction(demo_problem, demo_solution):
    r = _eval(demo_problem(2, "1_Conv2d_Relu_AddBias.py"), demo_solution(2, "1_Conv2d_Relu_AddBias.py"))
    assert r.correctness, r.metadata
