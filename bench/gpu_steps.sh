#!/usr/bin/env bash
# The GPU runs of docs/validation/gpu_plan.md as named steps, for a host without network.
#
#   OUT=<folder for results> bash bench/gpu_steps.sh env redteam pytest
#   OUT=... IDS=1,2,12 BT=270 NAME=l1_requests MODES=enforce bash bench/gpu_steps.sh sweep
#   OUT=... IDS=47,97 bash bench/gpu_steps.sh paths; OUT=... IDS=1-18,47,97 RUNS=5 NAME=l1 [DEADLINE=430] bash bench/gpu_steps.sh aa
#   OUT=... [SIZES=4,64,1024,8192] bash bench/gpu_steps.sh fingerprint
#   OUT=... [SIZES=256,1024,4096,8192] bash bench/gpu_steps.sh judgecost
#   OUT=... IDS=1-18,40-56 MODES=enforce NAME=l1_ray EXTRA=executor=ray bash bench/gpu_steps.sh sweep
#
# Needs, beside the checkout (all git-ignored): the pure-Python wheels in .whl/
# (pydra-config, pydantic, pydantic-core, annotated-types, typing-inspection, platformdirs,
# dill, typing-extensions; jsonschema, jsonschema-specifications, referencing, rpds-py for
# the GPU tests), upstream's problems in KernelBench/, and for `compare` an older tree in
# .base/ (git archive <commit> src bench); bench/device_wheels.sh fetches the wheels (and Ray's
# two halves, .ray_a/ and .ray_b/, with its needs in .raydeps/).  Each step appends its exit code and seconds to
# $OUT/env.txt and writes its log under $OUT.
set -u
: "${OUT:?set OUT to a folder for the results}"
mkdir -p "$OUT"
SITE=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl || exit 3
export PYTHONPATH="$SITE:src"
# Ray (bench/device_wheels.sh ray): its wheel comes in two halves, .ray_a/ with one call and
# .ray_b/ with the next on the same warm machine; once both are here it is installed into
# .raysite/ (git-ignored, kept between calls) and every later step can use executor=ray
if [[ ! -d .raysite && -f .ray_a/ray.part0 && -f .ray_b/ray.part1 ]]; then
  RAYWHL="/tmp/$(cat .ray_a/NAME)"
  cat .ray_a/ray.part0 .ray_b/ray.part1 > "$RAYWHL"
  if [[ "$(sha256sum "$RAYWHL" | cut -d' ' -f1)" == "$(cat .ray_a/SHA256)" ]]; then
    # into a folder of its own first: a call killed mid-install leaves no half .raysite behind
    rm -rf .raysite.tmp
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .raysite.tmp \
      "$RAYWHL" .raydeps/*.whl && mv .raysite.tmp .raysite
  else
    echo "ray wheel halves do not match their checksum" >&2
  fi
  rm -f "$RAYWHL"
fi
if [[ -d .raysite ]]; then
  export PYTHONPATH="$PYTHONPATH:$PWD/.raysite"
  export PATH="$PWD/.raysite/bin:$PATH"
fi

step() {  # name, command...
  local name=$1 t0
  shift
  t0=$(date +%s)
  "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc $? in $(( $(date +%s) - t0 )) s" >> "$OUT/env.txt"
}

for s in "$@"; do
  case $s in
    env) { date -u; git rev-parse --short HEAD 2>/dev/null; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
           python3 -c "import torch,triton;print('torch',torch.__version__,'cuda',torch.version.cuda,'triton',triton.__version__)"
           if [[ -d .raysite ]]; then python3 -c "import ray; print('ray', ray.__version__)" 2>&1 | tail -n 3
           else echo "ray: not installed"; fi
           nproc; lscpu 2>/dev/null | grep -E '^(Model name|CPU max MHz|CPU MHz)' || true
           free -g | head -2; } >> "$OUT/env.txt" 2>&1 ;;
    redteam) step redteam_cuda python3 scripts/reward_hardening_redteam.py --device cuda \
               --output "$OUT/redteam_cuda.json" ;;
    pytest) step pytest_gpu python3 -m pytest -m gpu -v -p no:cacheprovider --timeout 120 -rs ;;
    sweep) step "sweep_${NAME:-l1}" python3 bench/upstream_sweep.py --dataset-path KernelBench --device cuda \
             --modes "${MODES:-off,enforce}" --num-perf-trials "${TRIALS:-100}" --level "${LEVEL:-1}" \
             --ids "${IDS:?set IDS}" --batch-timeout "${BT:-270}" --work-dir "${WORK:-/tmp/kg_sweep_${NAME:-l1}}" \
             --out "$OUT" --name "${NAME:-l1}" ${EXTRA:+--extra $EXTRA} ;;
    paths) step timing_paths python3 bench/timing_paths.py --dataset-path KernelBench --level "${LEVEL:-1}" \
             --conditions "${CONDS:-warm,cold,warm_rest,warm_read,no_hold,ipc,reuse,persist,ipc_reuse}" --block "${BLOCK:-1}" \
             --ids "${IDS:-47,97,12,19}" --trials "${TRIALS:-30}" --out "$OUT" ;;
    aa) step "aa_${NAME:-l1}" python3 bench/aa_calibration.py --dataset-path KernelBench --device cuda \
          --level "${LEVEL:-1}" --ids "${IDS:?set IDS}" --runs "${RUNS:-5}" --arms "${ARMS:-aa,slow_candidate,slow_reference}" \
          --out "$OUT" --name "aa_${NAME:-l1}" ${DEADLINE:+--deadline-s "$DEADLINE"} ;;
    compare) step runtime_compare python3 bench/runtime_compare.py --baseline-tree .base --runs "${RUNS:-5}" ${FIXTURES:+--fixtures "$FIXTURES"} \
               --out "$OUT/compare" ;;
    fingerprint) step fingerprint_cost python3 bench/fingerprint_cost.py --sizes-mib "${SIZES:-4,64,1024,8192}" --out "$OUT" ;;
    judgecost) step judge_costs python3 bench/judge_costs.py --sizes-mib "${SIZES:-256,1024,4096,8192}" --out "$OUT" ;;
    *) echo "unknown step $s (env, redteam, pytest, sweep, paths, aa, compare, fingerprint, judgecost)" >&2; exit 2 ;;
  esac
done
tail -n 20 "$OUT/env.txt"
