"""A reference that draws random numbers in ``forward`` (dropout in training mode, upstream L2/66).

The judge seeds its generators before the reference's forward with a value derived from
the hidden seed under a key only it holds, and the candidate's harness seeds its own with
the same value before every call: the honest candidate (the reference renamed) passes,
a kernel that draws from a generator of its own is a plain correctness failure, and the
value the candidate sees tells it nothing about the hidden seed.
"""

from __future__ import annotations

import pytest

from kernelbench.reward_hardening.config import HardeningConfig

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return torch.softmax(self.dropout(x * 4.0), dim=1)


def get_inputs():
    return [torch.rand(64, 512)]


def get_init_inputs():
    return [0.2]
'''

HONEST = REFERENCE.replace("class Model(", "class ModelNew(")
# the same computation, but its dropout mask comes from a generator of its own
OWN_GENERATOR = HONEST.replace(
    "        return torch.softmax(self.dropout(x * 4.0), dim=1)",
    "        g = torch.Generator().manual_seed(1234)\n"
    "        keep = (torch.rand(x.shape, generator=g) >= 0.2).to(x.dtype) / 0.8\n"
    "        return torch.softmax(x * 4.0 * keep, dim=1)")


def _evaluate(src: str) -> dict:
    from kernelbench.reward_hardening.parent.pipeline import evaluate_hardened

    cfg = HardeningConfig(mode="enforce", policy="practical", device="cpu", num_perf_trials=3, timeout=60)
    return evaluate_hardened(REFERENCE, src, cfg)


def test_honest_candidate_of_a_dropout_reference_passes():
    record = _evaluate(HONEST)
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "PASS", rh["findings"]
    # every probe was judged: the hidden inputs, the repeat, each perturbation
    cfg = HardeningConfig()
    probes = record["metadata"]["correctness_probes"]
    assert probes["judged"] == {"hidden": cfg.num_correct_trials, "canary_repeat": 1,
                                **{f"perturb:{p}": 1 for p in cfg.perturbations}}, probes


def test_a_kernel_drawing_from_its_own_generator_is_a_correctness_failure():
    rh = _evaluate(OWN_GENERATOR)["reward_hardening"]
    errors = sorted(f["code"] for f in rh["findings"] if f["severity"] == "error")
    assert rh["integrity_status"] == "FAIL" and errors == ["RH-18"], rh["findings"]


@pytest.mark.parametrize("seed", [0, 1, (1 << 62) - 1])
def test_forward_seed_is_keyed_and_per_input_set(seed):
    from kernelbench.reward_hardening.judge.data import JudgeData

    a, b = JudgeData(), JudgeData()
    a.forward_key, b.forward_key = b"k" * 32, b"j" * 32
    fs = a.forward_seed(seed)
    assert fs == a.forward_seed(seed) and 0 <= fs < 1 << 62
    assert fs != b.forward_seed(seed) and fs != a.forward_seed(seed + 1) and fs != seed
