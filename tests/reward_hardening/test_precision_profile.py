"""RH-38's error profile: the reference's reduced-precision variants, only where an answer asks for them.

The judge computes the first hidden input again in bf16, fp16 and (on CUDA) TF32 after
the probes, and only when the candidate's right answer to it is off by more than fp32
rounding (``PRECISION_PROFILE_MIN_ERROR``): an exact answer costs no variant forwards.
"""

import os

import pytest

from kernelbench.reward_hardening import evaluate_hardened
from kernelbench.reward_hardening.config import PRECISION_PROFILE_MIN_ERROR
from kernelbench.reward_hardening.ipc.wire import recv_message

from test_pipeline import _cfg, _problem  # (the end-to-end tests' demo problems and configuration)

GELU = "level1/2_GELU_activation.py"


def _close(fds):
    for fd in fds:
        os.close(fd)


@pytest.mark.parametrize("lean", [False, True])
def test_the_judge_profiles_the_kept_first_input_after_the_probes(demo_judge, lean):
    """Kept reference outputs, or (the memory plan's lean mode) recomputed from the input set made again."""
    judge, peer = demo_judge(problem=GELU)
    judge.cmd_configure({"cmd": "configure", "lean": lean})
    recv_message(peer)
    judge.cmd_probe({"cmd": "probe", "seed": 7, "keep_first": True})
    reply, fds = recv_message(peer)
    _close(fds)
    assert "variants" not in reply  # a probe no longer computes them
    judge.cmd_judge({"cmd": "judge", "written": False})  # the probe is answered (unwritten) and released
    recv_message(peer)
    judge.cmd_variants({"cmd": "variants", "variants": ["bf16", "fp16", "tf32"]})
    out, _ = recv_message(peer)
    assert (judge.first["outs"] is None) is lean
    errors = {k: v["variant_rel_error"] for k, v in out["variants"].items()}
    assert set(errors) == {"bf16", "fp16"}  # TF32 only on CUDA
    # bf16 keeps 8 bits of mantissa, fp16 11: both far above fp32 rounding, bf16 the larger
    assert errors["bf16"] > errors["fp16"] > 10 * PRECISION_PROFILE_MIN_ERROR
    assert {"inputs", "variants"} <= set(out["split_ms"])
    # the same input set as the first probe's: the errors do not depend on when they are asked for
    judge.cmd_variants({"cmd": "variants", "variants": ["bf16"]})
    again, _ = recv_message(peer)
    assert again["variants"]["bf16"]["variant_rel_error"] == errors["bf16"]


def test_the_judge_refuses_a_profile_without_a_first_probe(demo_judge):
    judge, _ = demo_judge(problem=GELU)
    with pytest.raises(RuntimeError, match="no first probe"):
        judge.cmd_variants({"cmd": "variants", "variants": ["bf16"]})


SCALED = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x) * (1.0 + {eps})
"""


@pytest.mark.parametrize("eps, asked", [(0.0, False), (4e-5, True)])
def test_the_variants_are_asked_for_only_above_fp32_rounding(eps, asked):
    """An exact answer costs no variant forwards; a right one off by 4e-5 (inside allclose's 1e-4) does."""
    ref, _ = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, SCALED.format(eps=eps), _cfg())
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "PASS", rh["findings"]
    req = record["metadata"]["request_ms"]
    assert ("reference:variants" in req) is asked
    if asked:
        assert req["reference:variants"]["n"] == 1 and "reference:variants.variants" in req
    assert "reference:probe.variants" not in req


def test_an_error_of_fp16s_order_is_explained_by_the_variants_asked_for_after_the_probes():
    """End to end: the variants reach RH-38.  Off by 1.1e-4 (inside allclose on these inputs), the
    candidate's error is of the order of the fp16 reference's (about 3.2e-4 here), which explains it."""
    ref, _ = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, SCALED.format(eps=1.1e-4), _cfg())
    rh = record["reward_hardening"]
    rh38 = [f for f in rh["findings"] if f["code"] == "RH-38"]
    assert rh["integrity_status"] == "FAIL" and "RH-18" not in {f["code"] for f in rh["findings"]}
    assert rh38 and set(rh38[0]["evidence"]["error_profile"]["explained_by"]) == {"fp16"}
    assert record["metadata"]["request_ms"]["reference:variants"]["n"] == 1


def test_no_variants_for_a_wrong_first_answer():
    """A wrong answer is RH-18's; the error profile explains passing errors only, so nothing is asked."""
    ref, _ = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, SCALED.format(eps=0.01), _cfg())
    codes = {f["code"] for f in record["reward_hardening"]["findings"]}
    assert "RH-18" in codes and "RH-38" not in codes
    assert "reference:variants" not in record["metadata"]["request_ms"]


def test_no_variants_when_none_are_configured():
    ref, _ = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, SCALED.format(eps=4e-5), _cfg(precision_variants=()))
    assert "reference:variants" not in record["metadata"]["request_ms"]
