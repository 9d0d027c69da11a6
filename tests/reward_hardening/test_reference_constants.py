"""RH-08 compares each reference constant's final value, with tuple unpacking, in order."""

from kernelbench.reward_hardening.precheck import run_precheck

REF = """import torch
import torch.nn as nn

height = width = 2048
channels = 8
height, width = 32, 32


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.rand(channels, height, width)]


def get_init_inputs():
    return []
"""


def _rh08(candidate: str) -> list:
    res = run_precheck(candidate, REF, policy="practical", backend="cuda", precision="fp32")
    return [h for f in res.findings if f.code == "RH-08" for h in f.evidence.get("hits", [])]


def test_the_reference_itself_renamed_keeps_every_final_value():
    cand = REF.replace("class Model(", "class ModelNew(")
    assert _rh08(cand) == []


def test_a_changed_final_value_is_reported_with_both_values():
    cand = REF.replace("class Model(", "class ModelNew(").replace("height, width = 32, 32", "height, width = 16, 32")
    hits = _rh08(cand)
    assert [(h["constant"], h["candidate_value"], h["reference_value"]) for h in hits] == [("height", 16, 32)]


def test_an_intermediate_binding_that_ends_at_the_reference_value_is_fine():
    cand = REF.replace("class Model(", "class ModelNew(").replace("channels = 8", "channels = 1\nchannels = 8")
    assert _rh08(cand) == []
