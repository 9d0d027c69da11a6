"""Batch LLM generation of candidate kernels (KernelBench-compatible CLI).

Usage (from the repository root)::

    uv run python scripts/generate_samples.py run_name=my_run dataset_src=local level=1 \
        subset="(1,10)" server_type=openai model_name=openai/gpt-4o-mini

For every selected problem and ``sample_id in range(num_samples)`` the script builds
a prompt, queries the model, keeps the first fenced ``python``/``cpp`` block and writes
``runs/<run_name>/level_{L}_problem_{P}_sample_{S}_kernel.py``.  Pairs whose kernel
file already exists are skipped, so an interrupted run can simply be restarted.

Differences from upstream's script (keys and defaults are otherwise the same):

* ``temperature`` defaults to "unset": the ``server_type`` preset's temperature
  applies unless you pass ``temperature=...`` (upstream's 0.0 default meant the preset
  never took effect); with neither, 0.0 is used.  ``.greedy`` sets it to 0.0.
* The static check (``check_kernel=True``) never drops a sample by accident: upstream
  raised a NameError for any warning or failure.  Failed strict checks are appended to
  ``runs/<run_name>/generation_check_log.jsonl``; the kernel is still written unless
  ``drop_failed_checks=True``.  If ``kernelbench.kernel_static_checker`` is missing
  the check is skipped with a one-line note.
* Extra keys: ``dataset_path`` (``None`` = ``<repo>/KernelBench``, ``"demo"`` = the
  bundled demo set, or a directory), ``problem_ids`` (a list, instead of ``subset``),
  ``drop_failed_checks``, and ``mock_response`` (a canned model reply passed to
  ``litellm.completion(mock_response=...)``, for offline runs and tests).
* ``backend=hip`` is accepted; ``custom_prompt_key`` is rejected (no TOML prompts).
* Kernel files are written atomically (temporary file + rename), so a killed run never
  leaves a truncated kernel that a restart would then skip.

Exit status: 0 when every selected sample exists at the end, 1 when some generation
failed, 2 for a configuration mistake (one-line message on stderr).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable

REPO_TOP_DIR = Path(__file__).resolve().parents[1]

if importlib.util.find_spec("kernelbench") is None or importlib.util.find_spec("kernelbench.cli") is None:
    sys.path.insert(0, str(REPO_TOP_DIR / "src"))

import pydra  # noqa: E402

from kernelbench.cli import ConfigError, KBConfig, cli_main  # noqa: E402
from kernelbench.prompt_constructor import (  # noqa: E402
    BACKENDS,
    PRECISIONS,
    PROMPT_OPTIONS,
    build_prompt,
    find_example_pairs,
)
from kernelbench.runs import kernel_file_name  # noqa: E402
from kernelbench.utils import SERVER_PRESETS, extract_first_code, load_env, query_server  # noqa: E402

CHECK_LOG_NAME = "generation_check_log.jsonl"
CONFIG_FILE_NAME = "generation_config.yaml"


def _is_none(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null", ""))


class GenerationConfig(KBConfig):
    BOOL_KEYS = (
        "is_reasoning_model",
        "verbose",
        "log_prompt",
        "include_hardware_info",
        "check_kernel",
        "drop_failed_checks",
    )
    INT_KEYS = ("level", "num_workers", "num_samples", "budget_tokens")
    OPTIONAL_INT_KEYS = ("max_tokens",)
    FLOAT_KEYS = ("api_query_interval",)
    CHOICES = {
        "dataset_src": ("local", "huggingface"),
        "store_type": ("local",),
        "backend": BACKENDS,
        "precision": PRECISIONS,
        "prompt_option": PROMPT_OPTIONS,
    }

    def __init__(self):
        # KBConfig annotates its class-level key lists, so pydra insists on this call.
        super().__init__()
        # dataset selection
        self.dataset_src = pydra.REQUIRED  # local or huggingface
        self.dataset_name = "ScalingIntelligence/KernelBench"
        self.dataset_path = None  # None = <repo>/KernelBench; "demo" = bundled demo set
        self.level = pydra.REQUIRED
        self.subset = (None, None)  # inclusive (start_id, end_id)
        self.problem_ids = None  # alternative to subset: explicit list of ids

        self.run_name = pydra.REQUIRED
        self.num_workers = 64
        self.api_query_interval = 0.0

        # model
        self.server_type = None
        self.model_name = None
        self.max_tokens = None
        self.temperature = None  # None = take the preset's temperature (else 0.0)
        self.is_reasoning_model = False
        self.reasoning_effort = "low"
        self.budget_tokens = 0
        self.mock_response = None  # canned reply: no network request is made

        # output
        self.runs_dir = str(REPO_TOP_DIR / "runs")
        self.verbose = False
        self.store_type = "local"
        self.num_samples = 1
        self.log_prompt = False

        # prompt
        self.backend = "cuda"
        self.precision = "fp32"
        self.prompt_option = "one_shot"
        self.include_hardware_info = False
        self.hardware_gpu_name = None
        self.custom_prompt_key = None

        # static check of each sample
        self.check_kernel = True
        self.drop_failed_checks = False

    def greedy(self):
        """``.greedy`` on the command line: deterministic decoding."""
        self.temperature = 0.0

    def validate(self) -> None:
        self.run_name = str(self.run_name).strip()
        if not self.run_name or self.run_name in (".", "..") or "/" in self.run_name or "\\" in self.run_name:
            raise ConfigError("run_name", f"expected a plain directory name, got {self.run_name!r}")
        if self.level < 1:
            raise ConfigError("level", f"expected an integer >= 1, got {self.level}")
        if self.num_workers < 1:
            raise ConfigError("num_workers", f"expected an integer >= 1, got {self.num_workers}")
        if self.num_samples < 1:
            raise ConfigError("num_samples", f"expected an integer >= 1, got {self.num_samples}")
        if self.budget_tokens < 0:
            raise ConfigError("budget_tokens", f"expected an integer >= 0, got {self.budget_tokens}")
        if self.api_query_interval < 0:
            raise ConfigError("api_query_interval", f"expected a number >= 0, got {self.api_query_interval}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError("max_tokens", f"expected an integer >= 1 or None, got {self.max_tokens}")

        for key in ("dataset_path", "model_name", "hardware_gpu_name", "reasoning_effort", "mock_response"):
            value = getattr(self, key)
            if value is None or (key != "mock_response" and _is_none(value)):
                setattr(self, key, None)
            else:
                setattr(self, key, str(value))
        self.runs_dir = str(Path(str(self.runs_dir)).expanduser())
        self.dataset_name = str(self.dataset_name)

        self._validate_selection()
        self._validate_model()

        if self.include_hardware_info and not self.hardware_gpu_name:
            raise ConfigError("hardware_gpu_name", "required when include_hardware_info=True (e.g. hardware_gpu_name=H100)")
        if not _is_none(self.custom_prompt_key):
            raise ConfigError(
                "custom_prompt_key",
                "not supported by KernelGuard (there is no prompts.toml); use prompt_option=zero_shot/one_shot/few_shot",
            )
        self.custom_prompt_key = None

        # Same coupling as upstream: TileLang kernels need half precision, ThunderKittens bf16.
        if self.backend == "tilelang" and self.precision == "fp32":
            print("note: backend=tilelang needs half precision; using precision=fp16", file=sys.stderr)
            self.precision = "fp16"
        if self.backend == "thunderkittens" and self.precision != "bf16":
            print("note: backend=thunderkittens supports bf16 only; using precision=bf16", file=sys.stderr)
            self.precision = "bf16"

    def _validate_selection(self) -> None:
        subset = self.subset
        if _is_none(subset):
            subset = (None, None)
        if not isinstance(subset, (tuple, list)) or len(subset) != 2:
            raise ConfigError("subset", f'expected an inclusive (start_id, end_id) pair such as subset="(1,10)", got {subset!r}')
        bounds = []
        for bound in subset:
            if _is_none(bound):
                bounds.append(None)
            elif isinstance(bound, int) and not isinstance(bound, bool):
                bounds.append(bound)
            else:
                raise ConfigError("subset", f"bounds must be integers or None, got {subset!r}")
        if None not in bounds and bounds[0] > bounds[1]:
            raise ConfigError("subset", f"start {bounds[0]} is greater than end {bounds[1]}")
        self.subset = tuple(bounds)

        ids = self.problem_ids
        if _is_none(ids):
            self.problem_ids = None
        else:
            if isinstance(ids, int) and not isinstance(ids, bool):
                ids = [ids]
            if not isinstance(ids, (list, tuple, set)) or not ids:
                raise ConfigError("problem_ids", f'expected a list of integers such as problem_ids="[1,5]", got {ids!r}')
            if any(not isinstance(i, int) or isinstance(i, bool) for i in ids):
                raise ConfigError("problem_ids", f"expected integers, got {ids!r}")
            if self.subset != (None, None):
                raise ConfigError("problem_ids", "give either problem_ids or subset, not both")
            self.problem_ids = sorted(set(ids))

    def _validate_model(self) -> None:
        if _is_none(self.server_type):
            self.server_type = None
        else:
            lowered = str(self.server_type).strip().lower()
            if lowered not in SERVER_PRESETS:
                raise ConfigError("server_type", f"got {self.server_type!r}; accepted values: {', '.join(SERVER_PRESETS)}")
            self.server_type = lowered
        if self.server_type is None and self.model_name is None:
            raise ConfigError(
                "server_type",
                f"set server_type (accepted values: {', '.join(SERVER_PRESETS)}) or a litellm model_name",
            )

        if _is_none(self.temperature):
            self.temperature = None
        elif isinstance(self.temperature, bool):
            raise ConfigError("temperature", f"expected a number, got {self.temperature!r}")
        else:
            try:
                self.temperature = float(self.temperature)
            except (TypeError, ValueError):
                raise ConfigError("temperature", f"expected a number, got {self.temperature!r}") from None
            if self.temperature < 0:
                raise ConfigError("temperature", f"expected a number >= 0, got {self.temperature}")

        # Fill whatever the user left unset from the server preset.
        preset = SERVER_PRESETS.get(self.server_type or "", {})
        if self.model_name is None:
            self.model_name = preset.get("model_name")
        if self.max_tokens is None:
            self.max_tokens = preset.get("max_tokens")
        if self.temperature is None:
            self.temperature = float(preset.get("temperature", 0.0))

    def to_plain_dict(self) -> dict[str, Any]:
        """The settings as YAML-friendly plain data (tuples become lists, None stays null)."""
        out: dict[str, Any] = {}
        for key, value in vars(self).items():
            if key.startswith("_") or key.isupper():
                continue
            if isinstance(value, tuple):
                value = list(value)
            out[key] = value
        return out


# ----------------------------------------------------------------------------- helpers


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


EXIT_NO_KEY = 2  # the provider's API key is not set (checked before the first query)
EXIT_DATASET = 5  # the dataset could not be fetched (Hugging Face Hub unreachable, no cached copy)


def _fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def _atomic_write_text(path: Path, text: str) -> None:
    from kernelbench.runs import atomic_write_text

    atomic_write_text(path, text)


def _write_config_yaml(config: GenerationConfig, path: Path) -> None:
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value else None  # keep multi-line mock replies readable
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _str)
    _atomic_write_text(path, yaml.dump(config.to_plain_dict(), Dumper=_Dumper, sort_keys=True))


def load_static_checker() -> Callable[..., Any] | None:
    """``validate_kernel_static`` if the checker module is available, else ``None``."""
    try:
        module = importlib.import_module("kernelbench.kernel_static_checker")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("kernelbench"):
            _note("kernelbench.kernel_static_checker is not available; skipping static checks")
        else:
            _note(f"static checker could not be imported ({exc}); skipping static checks")
        return None
    except Exception as exc:  # a broken checker must not stop generation
        _note(f"static checker could not be imported ({type(exc).__name__}: {exc}); skipping static checks")
        return None
    checker = getattr(module, "validate_kernel_static", None)
    if not callable(checker):
        _note("kernelbench.kernel_static_checker has no validate_kernel_static; skipping static checks")
        return None
    return checker


def select_problem_ids(config: GenerationConfig, available: list[int]) -> list[int]:
    """The problem ids this run covers, from ``problem_ids`` or the inclusive ``subset``."""
    if config.problem_ids is not None:
        missing = [pid for pid in config.problem_ids if pid not in set(available)]
        if missing:
            _fail(f"problem_ids: not in level {config.level} of the dataset: {missing}")
        return list(config.problem_ids)
    if not available:
        return []
    start, end = config.subset
    start = min(available) if start is None else start
    end = max(available) if end is None else end
    return [pid for pid in available if start <= pid <= end]


class _Generator:
    """Generates one (problem, sample) pair; shared by the worker threads."""

    def __init__(self, config: GenerationConfig, run_dir: Path, checker: Callable[..., Any] | None):
        self.config = config
        self.run_dir = run_dir
        self.checker = checker
        self.log_lock = threading.Lock()

    def _log_check(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True)
        with self.log_lock:
            with open(self.run_dir / CHECK_LOG_NAME, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def _say(self, message: str) -> None:
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)

    def run(self, problem_id: int, sample_id: int, prompt: str) -> dict[str, Any]:
        cfg = self.config
        outcome: dict[str, Any] = {"problem_id": problem_id, "sample_id": sample_id, "status": "failed"}
        tag = f"level {cfg.level} problem {problem_id} sample {sample_id}"
        kernel_path = self.run_dir / kernel_file_name(cfg.level, problem_id, sample_id)

        if cfg.log_prompt:
            prompt_path = self.run_dir / kernel_path.name.replace("_kernel.py", "_prompt.txt")
            _atomic_write_text(prompt_path, prompt)

        try:
            reply = query_server(
                prompt,
                server_type=cfg.server_type,
                model_name=cfg.model_name,
                max_tokens=cfg.max_tokens,
                temperature=cfg.temperature,
                is_reasoning_model=cfg.is_reasoning_model,
                reasoning_effort=cfg.reasoning_effort,
                budget_tokens=cfg.budget_tokens,
                mock_response=cfg.mock_response,
            )
        except Exception as exc:
            first_line = (str(exc).strip().splitlines() or [""])[0]
            outcome["reason"] = f"query failed: {type(exc).__name__}: {first_line}"
            self._say(f"[{tag}] {outcome['reason']}")
            return outcome

        code = extract_first_code(reply, ["python", "cpp"])
        if code is None or not code.strip():
            outcome["reason"] = "no complete ```python or ```cpp code block in the reply"
            self._say(f"[{tag}] {outcome['reason']}")
            return outcome

        check_failed = False
        if cfg.check_kernel and self.checker is not None:
            check_failed = self._check(code, tag, problem_id, sample_id, kernel_path.name)
            if check_failed and cfg.drop_failed_checks:
                outcome["status"] = "dropped"
                outcome["reason"] = "failed static check (drop_failed_checks=True)"
                return outcome

        _atomic_write_text(kernel_path, code.rstrip() + "\n")
        outcome["status"] = "written"
        outcome["check_failed"] = check_failed
        if cfg.verbose:
            self._say(f"[{tag}] wrote {kernel_path}")
        return outcome

    def _check(self, code: str, tag: str, problem_id: int, sample_id: int, file_name: str) -> bool:
        """Run the static checker; True when it reports a strict failure."""
        cfg = self.config
        record = {
            "level": cfg.level,
            "problem_id": problem_id,
            "sample_id": sample_id,
            "kernel_file": file_name,
            "backend": cfg.backend,
            "precision": cfg.precision,
        }
        try:
            valid, errors, warnings = self.checker(code, cfg.backend, cfg.precision)
            errors = [str(e) for e in (errors or [])]
            warnings = [str(w) for w in (warnings or [])]
        except Exception as exc:
            # A crashing checker is reported but never costs the sample.
            self._say(f"[{tag}] static check raised {type(exc).__name__}: {exc}; keeping the sample")
            self._log_check({**record, "valid": None, "check_error": f"{type(exc).__name__}: {exc}"})
            return False
        if cfg.verbose and warnings:
            self._say(f"[{tag}] static check warnings: {'; '.join(warnings)}")
        if valid:
            return False
        action = "dropped" if cfg.drop_failed_checks else "kept"
        self._log_check({**record, "valid": False, "errors": errors, "warnings": warnings, "action": action})
        self._say(f"[{tag}] static check failed ({'; '.join(errors) or 'no details'}); sample {action}")
        return True


# -------------------------------------------------------------------------------- main


@cli_main(GenerationConfig)
def main(config: GenerationConfig) -> dict[str, Any]:
    from tqdm import tqdm

    from kernelbench.dataset import DatasetUnavailable, construct_kernelbench_dataset

    load_env()

    run_dir = Path(config.runs_dir) / config.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_config_yaml(config, run_dir / CONFIG_FILE_NAME)
    if config.verbose:
        print(f"run directory: {run_dir}", file=sys.stderr)

    try:
        dataset = construct_kernelbench_dataset(
            config.level,
            source=config.dataset_src,
            dataset_name=config.dataset_name,
            base_path=config.dataset_path,
        )
    except DatasetUnavailable as exc:
        _fail(f"dataset: {exc}", code=EXIT_DATASET)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        _fail(f"dataset: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}")

    selected = select_problem_ids(config, dataset.get_problem_ids())
    summary: dict[str, Any] = {
        "run_dir": str(run_dir),
        "problems": len(selected),
        "written": 0,
        "skipped": 0,
        "failed": 0,
        "check_failed": 0,
        "dropped": 0,
        "failures": [],
    }
    if not selected:
        _note(f"no problems of level {config.level} match the selection; nothing to do")
        return summary

    todo: list[tuple[int, int]] = []
    for pid in selected:
        for sample_id in range(config.num_samples):
            if (run_dir / kernel_file_name(config.level, pid, sample_id)).exists():
                summary["skipped"] += 1
            else:
                todo.append((pid, sample_id))
    if summary["skipped"]:
        print(f"skipping {summary['skipped']} sample(s) whose kernel file already exists", file=sys.stderr)
    if not todo:
        print("all selected samples already exist; nothing to generate", file=sys.stderr)
        return summary

    prompts: dict[int, str] = {}
    for pid in sorted({pid for pid, _ in todo}):
        problem = dataset.get_problem_by_id(pid)
        prompts[pid] = build_prompt(
            problem.code,
            backend=config.backend,
            prompt_option=config.prompt_option,
            precision=config.precision,
            include_hardware_info=config.include_hardware_info,
            hardware_gpu_name=config.hardware_gpu_name,
        )

    if config.prompt_option != "zero_shot" and not find_example_pairs(config.backend):
        _note(f"no worked example for backend={config.backend} in kernelbench/prompts; using zero-shot prompts")
    checker = load_static_checker() if config.check_kernel else None

    # Import litellm once here: concurrent first imports from worker threads are fragile.
    if config.mock_response is not None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from kernelbench._optional import MissingExtra, require

    try:
        require("litellm")  # the [gen] extra
    except MissingExtra as exc:
        _fail(str(exc), code=1)
    if config.mock_response is None:
        from kernelbench.utils import missing_api_keys

        missing = missing_api_keys(config.server_type, config.model_name)
        if missing:
            _fail(f"no API key for {config.model_name}: set {' or '.join(missing)} in the environment or in .env "
                  "(see .env.example), or pass mock_response=... for an offline run", code=EXIT_NO_KEY)

    generator = _Generator(config, run_dir, checker)
    workers = min(config.num_workers, len(todo))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {}
        for index, (pid, sample_id) in enumerate(todo):
            if index and config.api_query_interval > 0:
                time.sleep(config.api_query_interval)
            futures[pool.submit(generator.run, pid, sample_id, prompts[pid])] = (pid, sample_id)
        with tqdm(total=len(futures), desc=f"level {config.level} generation", unit="sample", file=sys.stderr) as bar:
            for future in as_completed(futures):
                pid, sample_id = futures[future]
                try:
                    outcome = future.result()
                except Exception as exc:  # unexpected (e.g. disk full): record and go on
                    outcome = {
                        "problem_id": pid,
                        "sample_id": sample_id,
                        "status": "failed",
                        "reason": f"{type(exc).__name__}: {exc}",
                    }
                status = outcome["status"]
                if status == "written":
                    summary["written"] += 1
                    summary["check_failed"] += int(bool(outcome.get("check_failed")))
                elif status == "dropped":
                    summary["dropped"] += 1
                    summary["check_failed"] += 1
                else:
                    summary["failed"] += 1
                    summary["failures"].append(outcome)
                bar.update(1)

    print(
        f"generation done: {summary['written']} written, {summary['skipped']} skipped (already present), "
        f"{summary['failed']} failed, {summary['check_failed']} failed the static check "
        f"({summary['dropped']} dropped); output in {run_dir}",
        file=sys.stderr,
    )
    return summary


if __name__ == "__main__":
    result = main()
    sys.exit(1 if result and (result.get("failed") or result.get("dropped")) else 0)
