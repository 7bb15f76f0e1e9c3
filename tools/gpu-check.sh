#!/usr/bin/env bash
# One command for a GPU machine: every check and measurement the lab has, in order, with a log
# and a summary. Made for machines with a driver, the CUDA toolkit and PyTorch but no Rust: run
# it from the repository with a release binary built elsewhere (target/release/harness, or
# $HARNESS). On a machine without a GPU it runs the same steps on the CPU and skips, with one
# line each, what needs a GPU (so CI keeps it working).
#
#   tools/gpu-check.sh [--out LAB] [--smoke] [--only STEP,STEP...]
#
# Steps: doctor, check (every kernel against the f64 reference), calibrate (the roofline's
# ceilings), tune (rung 09's tile shapes swept, the fastest per size recorded for the run to
# use), peers (PyTorch timings of the same shapes, merged into the tables), run (the default
# benchmark, in a new run folder), sanitize (compute-sanitizer memcheck then racecheck on the
# small shapes), ncu (Nsight Compute metrics of one launch per rung at each workload's headline
# shape: DRAM and SM throughput, achieved occupancy, shared-memory bank conflicts).
# --out LAB: the lab folder everything lands in (default: target/lab, the harness's own);
# the log, shapes and profiles go to LAB/gpu-check/<device>/, the run to LAB/runs/.
# --smoke: small shapes everywhere (CI). Publish a run with `harness publish LAB/runs/latest`.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

out=target/lab
smoke=0
only=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# The harness: a carried release binary, else a build here.
if [[ -n ${HARNESS:-} ]]; then
  H=("$HARNESS")
elif [[ -x target/release/harness ]]; then
  H=(target/release/harness)
elif command -v cargo >/dev/null; then
  H=(cargo run --quiet --release -p harness --)
else
  echo "gpu-check: no harness binary: build it with 'cargo build --release -p harness' and copy" \
       "target/release/harness here (or set HARNESS)" >&2
  exit 2
fi

# Every command of the harness below writes into this lab folder.
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LAB_DIR=$out

kind=$("${H[@]}" doctor --print kind) || { echo "gpu-check: the harness does not run" >&2; exit 2; }
slug=$("${H[@]}" doctor --print slug)
build=$("${H[@]}" doctor --print build)
dir=$out/gpu-check/$slug
mkdir -p "$dir"
log=$dir/gpu-check.log
: > "$log"
small=()
[[ $smoke == 1 ]] && small=(--small)

summary=()
failed=0
wanted() { [[ -z $only ]] || [[ ",$only," == *",$1,"* ]]; }
say() { echo "$*" | tee -a "$log"; }

# step NAME COMMAND...: runs and logs one step, records its outcome and time.
step() {
  local name=$1; shift
  wanted "$name" || return 0
  say "== $name: $*"
  local t0=$SECONDS rc
  "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  local dt=$((SECONDS - t0))
  if [[ $rc == 0 ]]; then
    summary+=("$(printf '%-10s ok      %4ds' "$name" "$dt")")
  else
    summary+=("$(printf '%-10s FAILED  %4ds  (exit %d, see %s)' "$name" "$dt" "$rc" "$log")")
    failed=1
  fi
}
skip() {
  wanted "$1" || return 0
  say "-- $1: skipped: $2"
  summary+=("$(printf '%-10s skipped: %s' "$1" "$2")")
}

say "gpu-check on $slug ($kind), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
step doctor "${H[@]}" doctor
step check "${H[@]}" check "${small[@]}"
if [[ $build != release ]]; then
  skip calibrate "a $build build of the harness measures its own unoptimized code, not the machine"
elif [[ $smoke == 1 ]]; then
  step calibrate "${H[@]}" calibrate --quick
else
  step calibrate "${H[@]}" calibrate
fi

# Tuning before the run, so rung 09 runs with the configuration chosen on this GPU.
if [[ $kind != cuda ]]; then
  skip tune "no GPU: rung 09's tile shapes are tuned by timing them on a GPU"
else
  step tune "${H[@]}" tune "${small[@]}"
fi

# PyTorch peers before the run, so the run's tables include them.
if [[ $kind != cuda ]]; then
  skip peers "no GPU: PyTorch peers are GPU rows"
elif ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  skip peers "PyTorch with CUDA is not importable by python3"
else
  peers_step() {
    "${H[@]}" shapes --device cuda "${small[@]}" > "$dir/shapes.json" &&
      mkdir -p "$out/peers" &&
      python3 tools/torch_peers.py --shapes "$dir/shapes.json" --out "$out/peers/$slug.json"
  }
  step peers peers_step
fi

step run "${H[@]}" run "${small[@]}"

if [[ $kind != cuda ]]; then
  skip sanitize "no GPU"
elif ! command -v compute-sanitizer >/dev/null; then
  skip sanitize "compute-sanitizer is not on PATH"
else
  sanitize() {
    local tool
    for tool in memcheck racecheck; do
      echo "-- compute-sanitizer --tool $tool"
      compute-sanitizer --tool "$tool" --error-exitcode 1 --print-limit 20 \
        "${H[@]}" check --device cuda --small || return 1
    done
  }
  step sanitize sanitize
fi

if [[ $kind != cuda ]]; then
  skip ncu "no GPU"
elif ! command -v ncu >/dev/null; then
  skip ncu "ncu (Nsight Compute) is not on PATH"
else
  metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
  metrics+=,sm__throughput.avg.pct_of_peak_sustained_elapsed
  metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active
  metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
  metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  profile() {
    local w size ok=0
    # `check` runs each kernel's plan once, so each launch is profiled once. Never touch the
    # clocks: --clock-control none.
    while read -r w size; do
      [[ $smoke == 1 ]] && size=$("${H[@]}" shapes --device cuda --workload "$w" --small --headline | cut -d' ' -f2)
      echo "-- ncu: $w $size"
      ncu --clock-control none --metrics "$metrics" --export "$dir/ncu-$w" --force-overwrite \
        "${H[@]}" check --device cuda --workload "$w" --sizes "$size" || ok=1
      ncu --import "$dir/ncu-$w.ncu-rep" --csv --page raw > "$dir/ncu-$w.csv" &&
        python3 tools/ncu_summary.py "$dir/ncu-$w.csv" > "$dir/ncu-$w.md" || ok=1
    done < <("${H[@]}" shapes --device cuda --headline)
    return $ok
  }
  step ncu profile
fi

say ""
say "gpu-check summary ($slug; run folder $out/runs/latest; log $log):"
for line in "${summary[@]}"; do say "  $line"; done
exit $failed
