"""Tests for kernelbench.dataset and the bundled demo task set."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelbench import dataset as ds
from kernelbench.dataset import (
    DEFAULT_DATASET_PATH,
    DEMO_DATASET_PATH,
    BaseDataset,
    HuggingFaceKernelBenchDataset,
    LocalKernelBenchDataset,
    Problem,
    construct_kernelbench_dataset,
    fetch_ref_arch_from_dataset,
    get_code_hash,
    resolve_dataset_path,
)

DEMO_COUNTS = {1: 11, 2: 4, 3: 2}
SOLUTIONS_PATH = DEMO_DATASET_PATH / "solutions"
PROMPTS_PATH = Path(ds.__file__).parent / "prompts"


# --------------------------------------------------------------------------- hashing


def test_code_hash_ignores_comments_whitespace_and_docstrings():
    a = "import torch\n\ndef f(x):\n    return x + 1\n"
    b = (
        '"""Module docstring."""\n'
        "import torch   # the framework\n"
        "\n\n"
        "def f(x):\n"
        "    '''A docstring'''\n"
        "    return x+1    # add one\n"
    )
    assert get_code_hash(a) == get_code_hash(b)
    assert len(get_code_hash(a)) == 32
    assert get_code_hash(a) != get_code_hash(a.replace("+ 1", "+ 2"))


def test_problem_hash_property():
    code = "x = 1  # one\n"
    p = Problem(problem_id=1, name="1_X.py", code=code, level=1)
    assert p.hash == get_code_hash("x=1")
    assert p.path is None and p.metadata is None


# --------------------------------------------------------------------------- paths


def test_resolve_dataset_path():
    assert resolve_dataset_path(None) == DEFAULT_DATASET_PATH
    assert resolve_dataset_path("") == DEFAULT_DATASET_PATH
    assert resolve_dataset_path("demo") == DEMO_DATASET_PATH
    assert resolve_dataset_path("/some/where") == Path("/some/where")
    assert resolve_dataset_path(Path("rel/dir")) == Path("rel/dir")
    assert DEFAULT_DATASET_PATH == Path(ds.__file__).resolve().parents[2] / "KernelBench"
    assert DEMO_DATASET_PATH == Path(ds.__file__).parent / "demo_tasks"


def test_module_import_is_light():
    code = (
        "import sys, kernelbench.dataset\n"
        "heavy = [m for m in ('torch', 'datasets', 'numpy') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# --------------------------------------------------------------------------- local dataset


@pytest.mark.parametrize("level", sorted(DEMO_COUNTS))
def test_local_demo_dataset(level):
    d = construct_kernelbench_dataset(level, source="local", base_path="demo")
    assert isinstance(d, LocalKernelBenchDataset)
    assert d.level == level
    assert len(d) == DEMO_COUNTS[level]
    ids = d.get_problem_ids()
    assert ids == list(range(1, DEMO_COUNTS[level] + 1))
    assert [p.problem_id for p in d] == ids
    for p in d:
        assert p.name.endswith(".py")
        assert p.name.split("_", 1)[0] == str(p.problem_id)
        assert p.level == level
        assert p.path is not None and Path(p.path).is_file()
        assert Path(p.path).read_text(encoding="utf-8") == p.code
        assert "class Model" in p.code
    assert d[0].problem_id == 1
    with pytest.raises(IndexError):
        d[len(d)]


def test_local_dataset_direct_class_and_fetch():
    d = LocalKernelBenchDataset(1, base_path=DEMO_DATASET_PATH)
    path, name, code = fetch_ref_arch_from_dataset(d, 5)
    assert name == "5_Square_matmul.py"
    assert path == str(DEMO_DATASET_PATH / "level1" / name)
    assert "torch.matmul" in code
    assert 5 in d and 99 not in d


def test_local_dataset_skips_non_problem_files_and_custom_level(tmp_path):
    lvl = tmp_path / "level7"
    lvl.mkdir()
    (lvl / "2_Second.py").write_text("b = 2\n")
    (lvl / "1_First.py").write_text("a = 1\n")
    (lvl / "helper.py").write_text("x = 0\n")
    (lvl / "notes_1.py").write_text("x = 0\n")
    (lvl / "3_Not_python.txt").write_text("x = 0\n")
    d = LocalKernelBenchDataset(7, base_path=str(tmp_path))
    assert d.get_problem_ids() == [1, 2]
    assert [p.name for p in d] == ["1_First.py", "2_Second.py"]


def test_local_dataset_missing_directory_message(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        LocalKernelBenchDataset(1, base_path=tmp_path / "nowhere")
    msg = str(err.value)
    assert "nowhere" in msg and "KernelBench" in msg and "dataset_path=demo" in msg
    with pytest.raises(FileNotFoundError, match="level9"):
        LocalKernelBenchDataset(9, base_path="demo")


@pytest.mark.parametrize("level", [0, -1])
def test_invalid_level(level):
    with pytest.raises(ValueError):
        construct_kernelbench_dataset(level, source="local", base_path="demo")
    with pytest.raises(ValueError):
        HuggingFaceKernelBenchDataset(level)


def test_hf_rejects_level_above_four():
    with pytest.raises(ValueError):
        HuggingFaceKernelBenchDataset(5)


def test_invalid_source():
    with pytest.raises(ValueError, match="source"):
        construct_kernelbench_dataset(1, source="s3", base_path="demo")


def test_get_problem_by_id_missing():
    d = construct_kernelbench_dataset(1, base_path="demo")
    with pytest.raises(ValueError, match="not found"):
        d.get_problem_by_id(999)
    with pytest.raises(ValueError, match="Problem ID 999 not found in dataset"):
        fetch_ref_arch_from_dataset(d, 999)


def test_subset_by_ids_and_range():
    d = construct_kernelbench_dataset(1, base_path="demo")
    s = d.subset(problem_ids=[7, 2, 5])
    assert type(s) is type(d)
    assert s.get_problem_ids() == [2, 5, 7]
    assert len(d) == DEMO_COUNTS[1]  # original untouched
    r = d.subset(id_range=(3, 6))
    assert r.get_problem_ids() == [3, 4, 5, 6]
    assert d.subset(problem_ids=[1, 500]).get_problem_ids() == [1]
    # ids and range together: union, as upstream
    assert d.subset(problem_ids=[10], id_range=(1, 2)).get_problem_ids() == [1, 2, 10]
    # constructor filters behave the same
    c = construct_kernelbench_dataset(1, base_path="demo", id_range=(2, 4))
    assert c.get_problem_ids() == [2, 3, 4]
    c = construct_kernelbench_dataset(1, base_path="demo", problem_ids=[9])
    assert [p.name for p in c] == ["9_Cumulative_sum.py"]


def test_sample_is_deterministic():
    d = construct_kernelbench_dataset(1, base_path="demo")
    a = d.sample(4).get_problem_ids()
    b = d.sample(4, seed=42).get_problem_ids()
    assert a == b and len(a) == 4 and a == sorted(a)
    assert set(a) <= set(d.get_problem_ids())
    seeds = {tuple(d.sample(4, seed=s).get_problem_ids()) for s in range(10)}
    assert len(seeds) > 1
    assert d.sample(100).get_problem_ids() == d.get_problem_ids()
    # the same draw as upstream's random.seed(seed); random.sample(ids, n)
    import random

    state = random.getstate()
    random.seed(42)
    expected = sorted(random.sample(d.get_problem_ids(), 4))
    random.setstate(state)
    assert a == expected


def test_representative_subset_filters_to_present_ids():
    d1 = construct_kernelbench_dataset(1, base_path="demo")
    assert d1.get_representative_subset().get_problem_ids() == [1, 3, 6]
    d2 = construct_kernelbench_dataset(2, base_path="demo")
    assert d2.get_representative_subset().get_problem_ids() == [1, 2]
    d3 = construct_kernelbench_dataset(3, base_path="demo")
    assert d3.get_representative_subset().get_problem_ids() == [1]
    assert ds.LEVEL1_REPRESENTATIVE_IDS[:3] == [1, 3, 6]
    assert len(ds.LEVEL1_REPRESENTATIVE_SUBSET) == len(ds.LEVEL1_REPRESENTATIVE_IDS)
    assert len(ds.LEVEL2_REPRESENTATIVE_SUBSET) == len(ds.LEVEL2_REPRESENTATIVE_IDS)
    assert len(ds.LEVEL3_REPRESENTATIVE_SUBSET) == len(ds.LEVEL3_REPRESENTATIVE_IDS)
    rep = ds.get_representative_dataset(1, base_path="demo")
    assert rep.get_problem_ids() == [1, 3, 6]
    sub, ids = ds.get_kernelbench_subset(1, num_subset_problems=3, base_path="demo")
    assert sub.get_problem_ids() == ids and len(ids) == 3


def test_base_dataset_is_abstract():
    with pytest.raises(TypeError):
        BaseDataset()  # type: ignore[abstract]


# --------------------------------------------------------------------------- hugging face (offline)


def _hf_rows(level: int, n: int):
    return {
        "code": [f"import torch\n# level {level} problem {i}\nX = {i}\n" for i in range(1, n + 1)],
        "level": [level] * n,
        "name": [f"{i}_Level{level}_problem_{i}" for i in range(1, n + 1)],
        "problem_id": list(range(1, n + 1)),
    }


@pytest.fixture(scope="module")
def saved_hf_dataset(tmp_path_factory):
    datasets = pytest.importorskip("datasets")
    root = tmp_path_factory.mktemp("hf")
    counts = {1: 5, 2: 3, 3: 2, 4: 2}
    dd = datasets.DatasetDict(
        {f"level_{lvl}": datasets.Dataset.from_dict(_hf_rows(lvl, n)) for lvl, n in counts.items()}
    )
    dict_path = root / "kernelbench_dict"
    dd.save_to_disk(str(dict_path))
    flat = datasets.concatenate_datasets([dd[f"level_{lvl}"] for lvl in counts])
    flat_path = root / "kernelbench_flat"
    flat.save_to_disk(str(flat_path))
    return dict_path, flat_path, counts


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_hf_dataset_from_saved_dict(saved_hf_dataset, level):
    dict_path, _, counts = saved_hf_dataset
    d = construct_kernelbench_dataset(level, source="huggingface", dataset_name=str(dict_path))
    assert isinstance(d, HuggingFaceKernelBenchDataset)
    assert d.level == level
    assert len(d) == counts[level]
    assert d.get_problem_ids() == list(range(1, counts[level] + 1))
    for p in d:
        assert p.name.endswith(".py") and not p.name.endswith(".py.py")
        assert p.name == f"{p.problem_id}_Level{level}_problem_{p.problem_id}.py"
        assert p.path is None
        assert p.level == level
    path, name, code = fetch_ref_arch_from_dataset(d, 1)
    assert path is None and name.endswith(".py") and "X = 1" in code


def test_hf_dataset_filters_and_subset(saved_hf_dataset):
    dict_path, _, _ = saved_hf_dataset
    d = construct_kernelbench_dataset(1, source="huggingface", dataset_name=str(dict_path), id_range=(2, 4))
    assert d.get_problem_ids() == [2, 3, 4]
    s = d.subset(problem_ids=[3])
    assert isinstance(s, HuggingFaceKernelBenchDataset) and s.get_problem_ids() == [3]
    with pytest.raises(ValueError, match="not found"):
        s.get_problem_by_id(2)
    assert d.sample(2).get_problem_ids() == d.sample(2).get_problem_ids()


def test_hf_dataset_from_saved_single_split(saved_hf_dataset):
    _, flat_path, counts = saved_hf_dataset
    d = HuggingFaceKernelBenchDataset(4, dataset_name=str(flat_path))
    assert len(d) == counts[4]
    assert all(p.name.endswith(".py") and p.level == 4 for p in d)


def test_hf_and_local_names_agree_for_same_problem(tmp_path):
    datasets = pytest.importorskip("datasets")
    local = construct_kernelbench_dataset(1, base_path="demo")
    rows = {"code": [], "level": [], "name": [], "problem_id": []}
    for p in local:
        rows["code"].append(p.code)
        rows["level"].append(1)
        rows["name"].append(p.name[: -len(".py")])  # upstream HF names lack .py
        rows["problem_id"].append(p.problem_id)
    datasets.DatasetDict({"level_1": datasets.Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "d"))
    hf = construct_kernelbench_dataset(1, source="huggingface", dataset_name=str(tmp_path / "d"))
    assert [p.name for p in hf] == [p.name for p in local]
    assert [p.hash for p in hf] == [p.hash for p in local]
    with pytest.raises(ValueError, match="level_2"):
        construct_kernelbench_dataset(2, source="huggingface", dataset_name=str(tmp_path / "d"))


# --------------------------------------------------------------------------- demo problems and solutions


def _load_module(path: Path, tag: str):
    spec = importlib.util.spec_from_file_location(f"_kb_test_{tag}", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _demo_files():
    out = []
    for level in sorted(DEMO_COUNTS):
        for p in construct_kernelbench_dataset(level, base_path="demo"):
            out.append(pytest.param(level, p, id=f"L{level}-{p.name}"))
    return out


def test_every_demo_problem_has_a_solution_and_nothing_else():
    for level in sorted(DEMO_COUNTS):
        problems = sorted(p.name for p in construct_kernelbench_dataset(level, base_path="demo"))
        solutions = sorted(f.name for f in (SOLUTIONS_PATH / f"level{level}").glob("*.py"))
        assert problems == solutions
    assert (DEMO_DATASET_PATH / "README.md").is_file()
    assert "NOT the official KernelBench" in (DEMO_DATASET_PATH / "README.md").read_text()


@pytest.mark.parametrize("level,problem", _demo_files())
def test_demo_problem_and_solution_agree(level, problem):
    torch = pytest.importorskip("torch")
    assert os.environ.get("KERNELBENCH_DEMO_SCALE", "1") == "1", "tests assume the CPU-sized scale"
    ref = _load_module(Path(problem.path), f"ref_{level}_{problem.problem_id}")
    sol = _load_module(SOLUTIONS_PATH / f"level{level}" / problem.name, f"sol_{level}_{problem.problem_id}")
    assert ref.SCALE == 1
    assert hasattr(sol, "ModelNew") and not hasattr(sol, "Model")

    torch.manual_seed(42)
    init_inputs = ref.get_init_inputs()
    model = ref.Model(*init_inputs).eval()
    torch.manual_seed(42)
    init_inputs_new = ref.get_init_inputs()
    model_new = sol.ModelNew(*init_inputs_new).eval()

    # Same parameters, in the same order, with the same values.
    ref_params = [p.detach() for p in model.parameters()]
    new_params = [p.detach() for p in model_new.parameters()]
    assert [p.shape for p in ref_params] == [p.shape for p in new_params]
    assert all(torch.equal(a, b) for a, b in zip(ref_params, new_params))

    torch.manual_seed(1234)
    inputs = ref.get_inputs()
    assert isinstance(inputs, list) and inputs
    for x in inputs:
        assert isinstance(x, torch.Tensor) and x.device.type == "cpu"
    if level == 1 and problem.problem_id == 8:
        assert inputs[1].dtype == torch.int64
    snapshot = [x.clone() for x in inputs]

    with torch.no_grad():
        out = model(*inputs)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            model(*inputs)
            times.append(time.perf_counter() - start)
        out_new = model_new(*inputs)

    assert all(torch.equal(a, b) for a, b in zip(inputs, snapshot)), "a model modified its inputs"
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert out.shape == out_new.shape
    assert torch.allclose(out, out_new, atol=1e-4, rtol=1e-4), (out - out_new).abs().max()
    # generous bound: CPU-sized means milliseconds, not seconds (shared CI CPUs are noisy)
    assert min(times) < 0.5, f"reference forward took {min(times) * 1e3:.1f} ms at scale 1"

    # Deterministic under the same seed.
    torch.manual_seed(42)
    again = ref.Model(*ref.get_init_inputs()).eval()
    with torch.no_grad():
        assert torch.equal(again(*inputs), out)

    max_abs = out.abs().max().item()
    if level == 1 and problem.problem_id == 11:
        assert max_abs < 1e-4  # deliberately tiny: all-zero output passes a plain allclose
        assert torch.allclose(torch.zeros_like(out), out, atol=1e-4, rtol=1e-4)
    else:
        assert max_abs > 1e-3


def test_demo_scale_knob_multiplies_sizes():
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(m.SCALE, m.batch_size)\n"
    )
    path = str(DEMO_DATASET_PATH / "level1" / "1_Elementwise_add.py")
    env = dict(os.environ, KERNELBENCH_DEMO_SCALE="4")
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["4", str(64 * 4)]


def test_every_demo_problem_reads_the_scale_knob():
    for level in sorted(DEMO_COUNTS):
        for p in construct_kernelbench_dataset(level, base_path="demo"):
            assert 'SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))' in p.code, p.name
            assert "import torch\n" in p.code and "import torch.nn as nn\n" in p.code, p.name
            assert "def get_inputs():" in p.code and "def get_init_inputs():" in p.code, p.name


# --------------------------------------------------------------------------- prompt examples


def test_prompt_add_examples_cpu():
    torch = pytest.importorskip("torch")
    ref = _load_module(PROMPTS_PATH / "model_ex_add.py", "ex_add")
    cpu = _load_module(PROMPTS_PATH / "model_new_ex_add_cpu.py", "ex_add_cpu")
    torch.manual_seed(0)
    a, b = ref.get_inputs()
    expected = ref.Model(*ref.get_init_inputs())(a, b)
    assert torch.equal(cpu.ModelNew(*ref.get_init_inputs())(a, b), expected)
    assert "a + b" not in (PROMPTS_PATH / "model_new_ex_add_cpu.py").read_text().split('"""')[-1]


def test_prompt_cuda_example_compiles_lazily():
    # Importing must not compile anything (no CUDA toolchain needed to import it).
    cuda_src = (PROMPTS_PATH / "model_new_ex_add.py").read_text()
    assert "__global__" in cuda_src and "load_inline" in cuda_src and 'name="elementwise_add"' in cuda_src
    mod = _load_module(PROMPTS_PATH / "model_new_ex_add.py", "ex_add_cuda")
    assert mod._extension is None
    cpp = _load_module(PROMPTS_PATH / "model_new_ex_add_cpp.py", "ex_add_cpp")
    assert cpp._extension is None
