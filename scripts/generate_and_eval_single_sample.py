"""Generate one kernel with an LLM for one KernelBench problem, then evaluate it.

    uv run python scripts/generate_and_eval_single_sample.py dataset_src=huggingface level=1 problem_id=1 \
        server_type=openai model_name=gpt-4o-mini

The command line of upstream KernelBench's script of the same name (same keys and
defaults; ``.verbose_logging`` turns on every ``log*`` switch).  Built on this
project's pieces: the prompt from ``kernelbench.prompt_constructor``, the request from
``kernelbench.utils.query_server``, the first ```python / ```cpp block of the reply, the
static checker, and the evaluation of ``scripts/run_and_check.py`` (candidate in a
disposable worker; ``reward_hardening_mode=audit|enforce`` for the hardened path).

Logs (when switched on) go to ``logdir`` (default ``results/eval_logs``):
``prompt_level_{L}_problem_{P}.txt``, ``generated_kernel_level_{L}_problem_{P}.py`` and
``eval_result_level_{L}_problem_{P}.txt`` (appended), as upstream.

Differences from upstream: extra keys ``dataset_path`` (``demo`` = bundled demo set),
``device`` (``cpu`` evaluates on the CPU), ``mock_response`` (a canned reply, no request:
for offline tests), ``num_correct_trials`` / ``num_perf_trials`` (upstream hard-wired
5 / 100, still the defaults), ``timeout``, ``reward_hardening_mode`` /
``reward_hardening_policy``; ``gpu_arch`` defaults to None (build for the visible GPU);
``eval_mode=modal`` and ``custom_prompt_key`` are not available.  A static-check error
or a reply without a code block ends with a one-line message and exit code 1 (upstream
raised an assertion).  The generated kernel is always written to ``logdir`` because the
evaluator reads it from a file; ``log_generated_kernel`` only controls the message.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import json
import sys
from pathlib import Path

from pydra import REQUIRED

from kernelbench.cli import (
    DATASET_SOURCES,
    ConfigError,
    EvalKeysConfig,
    cli_main,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


def _is_none(value) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", "none"))


class EvalConfig(EvalKeysConfig):
    BOOL_KEYS = EvalKeysConfig.BOOL_KEYS + ("is_reasoning_model", "log", "log_prompt", "log_generated_kernel",
                                            "log_eval_result", "include_hardware_info", "check_kernel")
    INT_KEYS = EvalKeysConfig.INT_KEYS + ("level", "problem_id", "budget_tokens")
    FLOAT_KEYS = ("timeout",)
    CHOICES = {**EvalKeysConfig.CHOICES, "dataset_src": DATASET_SOURCES,
               "prompt_option": ("zero_shot", "one_shot", "few_shot")}

    def __init__(self):
        self.set_eval_defaults()  # eval_mode, device, precision, backend, timing_method, trials, hardening keys
        # upstream keys and defaults
        self.dataset_src = REQUIRED
        self.dataset_name = "ScalingIntelligence/KernelBench"
        self.level = REQUIRED
        self.problem_id = REQUIRED
        self.gpu = "L40S"
        self.gpu_arch = None
        self.server_type = REQUIRED
        self.model_name = REQUIRED
        self.max_tokens = None
        self.temperature = None
        self.is_reasoning_model = False
        self.reasoning_effort = None
        self.budget_tokens = 0
        self.logdir = str(REPO_ROOT / "results" / "eval_logs")
        self.log = False
        self.log_prompt = False
        self.log_generated_kernel = False
        self.log_eval_result = False
        self.prompt_option = "one_shot"
        self.include_hardware_info = False
        self.hardware_gpu_name = None
        self.custom_prompt_key = None
        self.check_kernel = True
        # extensions
        self.dataset_path = None
        self.mock_response = None
        self.timeout = 300

    def verbose_logging(self):
        self.log = True
        self.log_prompt = True
        self.log_generated_kernel = True
        self.log_eval_result = True

    def validate(self):
        from kernelbench.utils import SERVER_PRESETS

        if self.eval_mode == "modal":
            raise ConfigError("eval_mode", "modal execution is not available; use eval_mode=local")
        if not _is_none(self.custom_prompt_key):
            raise ConfigError("custom_prompt_key", "is not supported (this project has no TOML prompt file)")
        if _is_none(self.server_type):
            self.server_type = None
        elif str(self.server_type).lower() not in SERVER_PRESETS:
            raise ConfigError("server_type", f"got {self.server_type!r}; accepted values: {', '.join(SERVER_PRESETS)}")
        else:
            self.server_type = str(self.server_type).lower()
        if _is_none(self.model_name):
            self.model_name = None
        if self.server_type is None and self.model_name is None:
            raise ConfigError("server_type", "set server_type or a litellm model_name")
        for key in ("max_tokens", "temperature", "reasoning_effort", "mock_response", "hardware_gpu_name"):
            if _is_none(getattr(self, key)):
                setattr(self, key, None)
        if self.max_tokens is not None:
            self.max_tokens = int(self.max_tokens)
        if self.temperature is not None:
            self.temperature = float(self.temperature)
        if isinstance(self.gpu_arch, str) and not _is_none(self.gpu_arch):
            self.gpu_arch = [self.gpu_arch]  # upstream wraps a bare name too
        if self.backend == "tilelang" and self.precision == "fp32":
            self.precision = "fp16"
        if self.backend == "thunderkittens":
            self.precision = "bf16"


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def main(cfg: EvalConfig) -> int:
    from kernelbench.dataset import DatasetUnavailable, construct_kernelbench_dataset
    from kernelbench.prompt_constructor import build_prompt
    from kernelbench.utils import extract_first_code, load_env, missing_api_keys, query_server

    try:
        ds = construct_kernelbench_dataset(cfg.level, source=cfg.dataset_src, dataset_name=cfg.dataset_name,
                                           base_path=cfg.dataset_path)
        problem = ds.get_problem_by_id(cfg.problem_id)
    except DatasetUnavailable as exc:
        _say(f"error: dataset: {exc}")
        return 5
    except (FileNotFoundError, ValueError, ImportError) as exc:
        _say(f"error: dataset: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}")
        return 2
    if cfg.mock_response is None:
        load_env()
        from kernelbench.utils import SERVER_PRESETS

        model = cfg.model_name or SERVER_PRESETS.get(cfg.server_type or "", {}).get("model_name", "")
        missing = missing_api_keys(cfg.server_type, model)
        if missing:
            _say(f"error: no API key for {model}: set {' or '.join(missing)} in the environment or in "
                 ".env (see .env.example), or pass mock_response=... for an offline run")
            return 2
    log_dir = Path(cfg.logdir)
    log_dir.mkdir(parents=True, exist_ok=True)
    tag = f"level_{cfg.level}_problem_{cfg.problem_id}"
    print(f"[single sample] level {cfg.level} problem {cfg.problem_id}: {problem.name}")

    prompt = build_prompt(problem.code, backend=cfg.backend, prompt_option=cfg.prompt_option,
                          precision=cfg.precision, include_hardware_info=cfg.include_hardware_info,
                          hardware_gpu_name=cfg.hardware_gpu_name)
    if cfg.log_prompt:
        (log_dir / f"prompt_{tag}.txt").write_text(prompt, encoding="utf-8")

    try:
        reply = query_server(prompt, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                             server_type=cfg.server_type, model_name=cfg.model_name,
                             is_reasoning_model=cfg.is_reasoning_model, budget_tokens=cfg.budget_tokens,
                             reasoning_effort=cfg.reasoning_effort, mock_response=cfg.mock_response)
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        first = (str(exc).strip().splitlines() or [""])[0]
        _say(f"error: query failed: {type(exc).__name__}: {first}")
        return 1
    code = extract_first_code(reply, ["python", "cpp"])
    if not code or not code.strip():
        _say("error: the reply has no complete ```python or ```cpp code block")
        return 1
    kernel_path = log_dir / f"generated_kernel_{tag}.py"
    kernel_path.write_text(code + "\n", encoding="utf-8")
    if cfg.log_generated_kernel or cfg.verbose:
        print(f"[single sample] generated kernel written to {kernel_path}")

    if cfg.check_kernel:
        from kernelbench.kernel_static_checker import validate_kernel_static

        valid, errors, warnings = validate_kernel_static(code, backend=cfg.backend, precision=cfg.precision)
        for w in warnings:
            print(f"[static check] warning: {w}")
        if not valid:
            for e in errors:
                print(f"[static check] error: {e}")
            _say("error: the static checker rejected the generated kernel (check_kernel=False skips the check)")
            return 1

    from kernelbench.commands import check as run_and_check

    rc_cfg = run_and_check.ScriptConfig()
    result_path = log_dir / f"eval_result_{tag}.json"
    for key, value in dict(
        ref_origin="kernelbench", dataset_src=cfg.dataset_src, dataset_name=cfg.dataset_name,
        dataset_path=cfg.dataset_path, level=cfg.level, problem_id=cfg.problem_id, kernel_src_path=str(kernel_path),
        eval_mode="local", gpu=cfg.gpu, gpu_arch=cfg.gpu_arch, precision=cfg.precision, backend=cfg.backend,
        timing_method=cfg.timing_method, device=cfg.device, num_correct_trials=cfg.num_correct_trials,
        num_perf_trials=cfg.num_perf_trials, timeout=cfg.timeout, measure_performance=True, verbose=cfg.verbose,
        check_kernel=False, measure_torch_compile=False, reward_hardening_mode=cfg.reward_hardening_mode,
        reward_hardening_policy=cfg.reward_hardening_policy, allow_tf32=cfg.allow_tf32, output_file=str(result_path),
    ).items():
        setattr(rc_cfg, key, value)
    rc_cfg.finalize()
    status = run_and_check.main(rc_cfg)
    if status:
        return status
    if cfg.log_eval_result and result_path.exists():
        record = json.loads(result_path.read_text())
        with open(log_dir / f"eval_result_{tag}.txt", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, indent=2) + "\n")
    return 0


entry = cli_main(EvalConfig)(main)

if __name__ == "__main__":
    sys.exit(entry() or 0)
