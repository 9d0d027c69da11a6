#!/usr/bin/env bash
# Fetch the wheels a GPU host without network needs beside its own image, into the
# git-ignored folders bench/gpu_steps.sh reads, at the versions uv.lock pins.
#
#   bash bench/device_wheels.sh          # .whl/: the pure-Python dependencies (every call carries it)
#   bash bench/device_wheels.sh ray      # also Ray and what it needs that the image lacks, with
#                                        # Ray's own wheel (~76 MiB) split into .ray_a/ and .ray_b/
#
# One call may carry at most 64 MiB, so Ray travels in two back-to-back calls on a warm
# machine: the first carries .ray_a (and .whl, KernelBench), the second .ray_b; an ignored
# folder a call brought stays on the machine for the next one.  gpu_steps.sh joins the
# halves and installs Ray into .raysite/ once both are there (docs/ray.md).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | ray) ;;
  *) echo "usage: bash bench/device_wheels.sh [ray]" >&2; exit 2 ;;
esac

pinned() {  # the version uv.lock resolves for a package (the newest where several are locked)
  python3 - "$1" <<'EOF'
import re, sys
text = open("uv.lock").read()
versions = re.findall(r'\[\[package\]\]\nname = "%s"\nversion = "([^"]+)"' % re.escape(sys.argv[1]), text)
if not versions:
    sys.exit(f"{sys.argv[1]} is not in uv.lock")
print(max(versions, key=lambda v: [int(p) if p.isdigit() else 0 for p in re.split(r"[.+]", v)]))
EOF
}

fetch() {  # folder, package names... (the folder is emptied first: two versions of one package stop pip there)
  local dir=$1 version
  shift
  mkdir -p "$dir"
  rm -f "$dir"/*.whl
  for name in "$@"; do
    version=$(pinned "$name")
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform any -d "$dir" "$name==$version"
  done
}

# the CLI's configuration and the records' models; jsonschema for the GPU tests
fetch .whl pydra-config pydantic pydantic-core annotated-types typing-inspection platformdirs dill \
  typing-extensions jsonschema jsonschema-specifications referencing rpds-py
if [[ "${1:-}" == "ray" ]]; then
  # Ray's needs that the image's packages (transformers, onnx, ...) do not bring already
  fetch .raydeps click msgpack
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fetch "$tmp" ray
  wheel=$(ls "$tmp"/ray-*.whl)
  mkdir -p .ray_a .ray_b
  rm -f .ray_a/* .ray_b/*
  half=$(( ($(stat -c %s "$wheel") + 1) / 2 ))
  split -b "$half" -d -a 1 "$wheel" "$tmp/part."
  mv "$tmp/part.0" .ray_a/ray.part0
  mv "$tmp/part.1" .ray_b/ray.part1
  basename "$wheel" > .ray_a/NAME
  sha256sum "$wheel" | cut -d' ' -f1 > .ray_a/SHA256
  cp .ray_a/NAME .ray_a/SHA256 .ray_b/
  du -sh .whl .raydeps .ray_a .ray_b
else
  du -sh .whl
fi
