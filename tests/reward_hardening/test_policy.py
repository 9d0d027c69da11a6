"""The policy module: observations -> findings (severities from the code table) and required capabilities."""

import pytest

from kernelbench.reward_hardening import policy
from kernelbench.reward_hardening.codes import CODES
from kernelbench.reward_hardening.config import MODES, POLICIES
from kernelbench.reward_hardening.findings import observe


@pytest.mark.parametrize("name", POLICIES)
def test_every_code_gets_the_severity_of_the_code_table(name):
    for code, info in CODES.items():
        f = policy.judge(observe(code, {"k": 1}), name)
        assert f.severity == info.severity[name] == policy.severity(code, name), (code, name)
        assert (f.code, f.detector, f.summary, f.remediation) == (code, info.detector, info.summary, info.remediation)
        assert f.evidence == {"k": 1} and f.policy_rule == "reward_hardening"


@pytest.mark.parametrize("name", POLICIES)
def test_an_info_only_observation_is_info_and_overrides_keep(name):
    f = policy.judge(observe("RH-37", summary="joined", info_only=True, policy_rule="precheck.x"), name)
    assert (f.severity, f.summary, f.policy_rule) == ("info", "joined", "precheck.x")
    assert policy.judge(f, name) is f  # a finding is judged already


def test_apply_keeps_order_and_count():
    found = policy.apply([observe("RH-18"), observe("RH-13"), observe("RH-18")], "practical")
    assert [(f.code, f.severity) for f in found] == [("RH-18", "error"), ("RH-13", "info"), ("RH-18", "error")]


def test_required_capabilities_per_policy_and_mode():
    for m in MODES:
        for name in ("cuda_runtime", "static_precheck", "process_isolation", "hidden_inputs", "async_timing_check"):
            assert all(policy.requires(name, p, m) for p in POLICIES), name
        for name in ("thread_introspection", "trusted_output_read", "containment_landlock",
                     "containment_capability_drop", "containment_ipc_namespace", "containment_memory_accounting"):
            assert not any(policy.requires(name, p, m) for p in POLICIES), name
        assert policy.requires("backend_profiler", "source_strict", m)
        assert not policy.requires("backend_profiler", "practical", m)
    # the containment that makes a run trustworthy is required under enforce only, by every policy
    for name in ("containment_process", "containment_seccomp", "containment_object_sweep"):
        assert all(policy.requires(name, p, "enforce") for p in POLICIES), name
        assert not any(policy.requires(name, p, "audit") for p in POLICIES), name


@pytest.mark.parametrize("mode", MODES)
def test_static_errors_reject_before_the_run_only_under_enforce(mode):
    for name in POLICIES:
        strict_error = policy.apply([observe("RH-13")], name)  # error / info
        assert policy.rejects_before_run(strict_error, mode) == (mode == "enforce" and name == "source_strict")
        assert not policy.rejects_before_run(policy.apply([observe("RH-27")], name), mode)  # a warning


def test_policy_and_mode_names_are_defined_once():
    from kernelbench import cli

    assert cli.HARDENING_POLICIES is POLICIES
    assert cli.HARDENING_MODES == ("off", *MODES)
    assert all(set(info.severity) == set(POLICIES) for info in CODES.values())
