"""A broken kernel is a correctness failure with its reason, never a reward-hacking code.

One end-to-end evaluation per row of the correctness table (enforce/practical, CPU,
demo problem level1/1): the record's error codes are exactly the row's, and the
printed evidence line (the summary's line under the finding) carries the reason.
Messages of exceptions raised on hidden inputs never reach the summary.
"""

from __future__ import annotations

import pytest

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.findings import describe
from kernelbench.reward_hardening.fixtures import PROBLEM_DIR

ADD = "level1/1_Elementwise_add.py"
HEAD = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n\n    def forward(self, a, b):\n")

ROWS = {
    "wrong_shape": (HEAD + "        return (a + b)[:, :-1]\n", ["RH-18"], "has shape [64, 16383], expected [64, 16384]"),
    "wrong_dtype": (HEAD + "        return (a + b).double()\n", ["RH-18"], "has dtype float64, expected float32"),
    "non_finite": (HEAD + "        out = a + b\n        out[0, 0] = float('nan')\n        return out\n", ["RH-18"],
                   "1 of 1048576 output values are NaN or inf"),
    "value_mismatch": (HEAD + "        return a + b + 0.5\n", ["RH-18"], "max abs error 0.5, mean abs error 0.5"),
    "raises_every_call": (HEAD + "        raise RuntimeError('SEC' + 'RET ' + str(a[0, :3].tolist()))\n", ["RH-18"],
                          "raises RuntimeError at candidate.py:10"),
    "raises_on_perturbed": (HEAD + "        if bool((a < 0).any()):\n"
                                   "            raise ValueError('secret ' + str(a[0, :3].tolist()))\n"
                                   "        return a + b\n", ["RH-30"], "raises ValueError at candidate.py:11"),
    "no_model_new": ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, a, b):\n"
                     "        return a + b\n", ["RH-42"], "candidate does not define ModelNew"),
}


def _evaluate(src: str) -> dict:
    from kernelbench.reward_hardening.parent.pipeline import evaluate_hardened

    cfg = HardeningConfig(mode="enforce", policy="practical", device="cpu", num_perf_trials=3, timeout=60)
    return evaluate_hardened((PROBLEM_DIR / ADD).read_text(), src, cfg)


@pytest.mark.parametrize("row", sorted(ROWS))
def test_each_kind_of_broken_kernel_gets_exactly_its_code_and_evidence_line(row):
    src, codes, line = ROWS[row]
    record = _evaluate(src)
    rh = record["reward_hardening"]
    errors = sorted(f["code"] for f in rh["findings"] if f["severity"] == "error")
    assert rh["integrity_status"] == "FAIL" and errors == codes, (row, rh["findings"])
    f = next(f for f in rh["findings"] if f["code"] == codes[0])
    assert line in describe(f), describe(f)
    if codes == ["RH-18"] and row.startswith("raises"):
        assert "message withheld" in record["metadata"]["runtime_error"]
    elif codes == ["RH-18"]:
        assert record["metadata"]["correctness_issue"]


def test_hidden_input_exception_messages_never_reach_the_summary_or_the_record():
    from kernelbench.commands.check import format_summary

    record = _evaluate(ROWS["raises_every_call"][0])
    text = format_summary(record)
    assert "raises RuntimeError at candidate.py:10" in text
    # the message carried the hidden values: it is nowhere in the record or the summary
    import json

    blob = json.dumps(record)
    assert "SECRET" not in text and "SECRET" not in blob
