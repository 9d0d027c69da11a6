"""The record check agrees with a JSON Schema validator, and the record builder fails closed."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from kernelbench.reward_hardening import record_schema
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent import records


def _stats(ms: float) -> dict:
    return {"mean": ms, "std": 0.0, "min": ms, "max": ms, "num_trials": 10, "median": ms, "device": "cpu"}


def _pass_record() -> dict:
    block = {
        "schema_version": "1.1", "mode": "enforce", "policy": "practical", "integrity_status": "PASS",
        "verified": True, "verified_correctness": True, "verified_runtime": 1.0,
        "verified_runtime_stats": _stats(1.0), "observed_runtime_stats": _stats(1.0),
        "verified_reference_runtime": 2.0, "verified_reference_runtime_stats": _stats(2.0),
        "observed_reference_runtime_stats": _stats(2.0),
        "speedup": {"statistic": "median ratio", "point": 2.0, "lower_bound": 1.5, "upper_bound": 2.5, "level": 0.99,
                    "method": "two-stage block bootstrap", "blocks": 4, "resamples": 2000, "claims_faster": True,
                    "claims_slower": False, "verified": True,
                    "reference": {"n": 10, "median_ms": 2.0, "cv": 0.1, "iqr_over_median": 0.1, "outliers": 0},
                    "candidate": {"n": 10}, "host_load": {"other_runnable_median": 0.0, "usable_cpus": 2}},
        "findings": [{"code": "RH-41", "detector": "RH-IMPLAUSIBLE-SPEEDUP", "severity": "info", "summary": "s",
                      "evidence": {}, "policy_rule": "reward_hardening", "remediation": "r",
                      "more_info": "docs/attack-catalog.md#rh-41"}],
        "capabilities": {"static_precheck": {"status": "AVAILABLE", "required": True, "detail": "ast"}},
        "limitations": ["none"],
    }
    return {"sample_id": 0, "compiled": True, "correctness": True, "metadata": {"device": "cpu"}, "runtime": 1.0,
            "runtime_stats": _stats(1.0), "ref_runtime": 2.0, "ref_runtime_stats": _stats(2.0),
            "reward_hardening": block}


def _set(path: str, value):
    def mutate(record: dict) -> None:
        *parents, last = path.split(".")
        node = record
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return mutate


def _drop(path: str):
    def mutate(record: dict) -> None:
        *parents, last = path.split(".")
        node = record
        for key in parents:
            node = node[key]
        del node[last]
    return mutate


MUTATIONS = {
    "valid": lambda r: None,
    "integer float": _set("reward_hardening.observed_runtime_stats.num_trials", 10.0),
    "bool as integer": _set("reward_hardening.observed_runtime_stats.num_trials", True),
    "string as number": _set("runtime", "1.0"),
    "missing required": _drop("compiled"),
    "extra block key": _set("reward_hardening.extra", 1),
    "extra record key": _set("extra", 1),
    "bad enum": _set("reward_hardening.mode", "off"),
    "bad const": _set("reward_hardening.schema_version", "1.0"),
    "const of another type": _set("reward_hardening.schema_version", 1.1),
    "verified but FAIL": _set("reward_hardening.integrity_status", "FAIL"),
    "FAIL with runtime": lambda r: (_set("reward_hardening.integrity_status", "FAIL")(r),
                                    _set("reward_hardening.verified", False)(r)),
    "FAIL, null runtime": lambda r: (_set("reward_hardening.integrity_status", "FAIL")(r),
                                     _set("reward_hardening.verified", False)(r),
                                     _set("reward_hardening.verified_runtime", None)(r)),
    "zero runtime": _set("reward_hardening.verified_runtime", 0),
    "code pattern": _set("reward_hardening.findings.0.code", "RH-1"),
    "empty summary": _set("reward_hardening.findings.0.summary", ""),
    "more_info pattern": _set("reward_hardening.findings.0.more_info", "elsewhere"),
    "level 1": _set("reward_hardening.speedup.level", 1.0),
    "level 0.5": _set("reward_hardening.speedup.level", 0.5),
    "blocks 0": _set("reward_hardening.speedup.blocks", 0),
    "spread without n": _drop("reward_hardening.speedup.candidate.n"),
    "host_load extra": _set("reward_hardening.speedup.host_load.other", 1),
    "capability status": _set("reward_hardening.capabilities.static_precheck.status", "OK"),
    "capability not an object": _set("reward_hardening.capabilities.static_precheck", "AVAILABLE"),
    "limitation not a string": _set("reward_hardening.limitations.0", 3),
    "findings not an array": _set("reward_hardening.findings", {}),
    "tuple limitations": _set("reward_hardening.limitations", ("a", "b")),
    "NaN runtime": _set("reward_hardening.verified_runtime", float("nan")),
    "metadata anything": _set("metadata", {"x": [1, None, {"y": "z"}]}),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_the_check_agrees_with_jsonschema(name):
    schema = record_schema.load_schema()
    record = _pass_record()
    MUTATIONS[name](record)
    as_written = json.loads(json.dumps(record))  # what a reader of the file validates (tuples become arrays)
    expected_valid = jsonschema.Draft202012Validator(schema).is_valid(as_written)
    assert (not record_schema.problems(record)) == expected_valid, record_schema.problems(record)
    results = {"1": [record], "12": [record, record]}
    assert (not record_schema.problems(results, "results_file")) == expected_valid
    assert record_schema.problems({"one": [record]}, "results_file")


def test_the_fixed_records_are_valid():
    cfg = HardeningConfig(mode="enforce", device="cpu")
    for record in (records.unsupported_record(cfg, "CUDA unavailable"), records.evaluator_error_record(cfg, "x"),
                   records.load_failed_record(cfg, "build failed", "cpu")):
        assert record_schema.problems(record) == []


def test_an_unknown_schema_keyword_is_refused_not_skipped():
    schema = record_schema.load_schema()
    schema["$defs"]["spread"]["properties"]["n"]["maximum"] = 3
    with pytest.raises(record_schema.UnsupportedSchema, match="maximum"):
        record_schema.problems(_pass_record(), schema=schema)


def test_a_record_breaking_the_schema_becomes_an_evaluator_error(monkeypatch):
    cfg = HardeningConfig(mode="enforce", device="cpu")
    monkeypatch.setattr(records, "speedup_block", lambda ev, verified: {"point": "fast"})
    record = records.load_failed_record(cfg, "build failed", "cpu")
    block = record["reward_hardening"]
    assert block["integrity_status"] == "FAIL" and [f["code"] for f in block["findings"]] == ["RH-32"]
    assert "does not match verified_record.schema.json" in record["metadata"]["reward_hardening_error"]
    assert "speedup" in record["metadata"]["reward_hardening_error"]
    assert record_schema.problems(copy.deepcopy(record)) == []
