#!/usr/bin/env bash
# One command for a GPU machine: every check and measurement the lab has, in order, with a log
# and a summary. Made for machines with a driver, the CUDA toolkit and PyTorch but no Rust: run
# it from the repository with a release binary built elsewhere (target/release/harness, or
# $HARNESS). On a machine without a GPU it runs the same steps on the CPU and skips, with one
# line each, what needs a GPU (so CI keeps it working).
#
#   tools/gpu-check.sh [--out LAB] [--smoke] [--budget MINUTES] [--only STEP,STEP...]
#
# Steps, what tells most in the least time first: glibc (`ldd --version`: can a carried binary
# run here), nvidia-smi, doctor (the GPU, driver, and which CUDA libraries were loaded from
# where), risky (each rung that could hang or fault a GPU process, alone at the small shapes:
# GPU-only rungs and those compiled for sm_90a alone, each row in a child process with a time
# limit), sanitize
# (compute-sanitizer memcheck then racecheck on the small shapes), check (every kernel against
# the f64 reference), examples (the kernels of examples/ as user rows), calibrate (the
# roofline's ceilings), tune (rung 09's tile shapes swept,
# the fastest per size recorded for the run to use), peers (PyTorch timings of the same shapes,
# merged into the tables), run (the default benchmark, in a new run folder), ncu (Nsight
# Compute metrics of one launch per rung at each workload's headline shape: DRAM and L2 bytes
# and throughput, achieved occupancy, tensor-pipe utilisation, bank conflicts of LDS, STS,
# LDSM and LDGSTS, warp stall reasons). Between run and ncu, experiments: questions the
# walkthroughs leave open, each one run of its own in the gpu-check folder (without a GPU, in
# the simulator on the small shapes, which checks that each still runs); then gap: the rungs
# that miss their speed targets profiled beside cuBLAS and PyTorch at the shape the target is
# set at (GEMM 4096, attention S = 4096, D = 128), section by section and SASS line by SASS
# line, into gap-*.md (tools/ncu_gap.py).
# --out LAB: the lab folder everything lands in (default: target/lab, the harness's own);
# the log, shapes and profiles go to LAB/gpu-check/<device>/, the run to LAB/runs/.
# --budget MINUTES (default 40): every step runs under `timeout` with its share of what is left
# of the budget among the steps still to run, so the whole script ends inside it and time a
# step leaves unused goes to the later ones; a budget under
# 20 minutes checks and profiles on the small shapes, as --smoke does, and benchmarks only the
# headline shapes of tools/gpu-headline.toml, with PyTorch beside them, leaving out the tuning
# and the experiments unless --only names them. The summary lists the
# steps that timed out; each step's files are written as it ends, so a cut-off run keeps what
# finished.
# --smoke: small shapes everywhere (CI). Publish a run with `harness publish LAB/runs/latest`.
set -uo pipefail
# NVRTC's output depends on where its memory lies: the script runs itself with address
# randomization off where the system allows it, so that every harness below starts that way and
# none starts itself again (under compute-sanitizer or ncu, which follow the process they start).
if [[ -z ${KERNEL_LAB_LAYOUT_TRIED:-} ]]; then
  export KERNEL_LAB_LAYOUT_TRIED=1
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    exec setarch "$(uname -m)" -R bash "$0" "$@"
  fi
fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

out=target/lab
smoke=0
budget=40
only=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --budget) budget=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if ! [[ $budget =~ ^[0-9]+$ ]] || (( budget < 1 )); then
  echo "gpu-check: --budget takes a whole number of minutes, not '$budget'" >&2
  exit 2
fi
budget_s=$((budget * 60))
# A short budget: small shapes for the checks, the headline shapes for the benchmark.
headline=0
(( budget < 20 )) && [[ $smoke == 0 ]] && headline=1
(( budget < 20 )) && smoke=1

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
# What the benchmark and its PyTorch peers run: the full sweep, the small shapes or the headline.
bench=("${small[@]}")
[[ $headline == 1 ]] && bench=(--config tools/gpu-headline.toml)

summary=()
timed_out=()
failed=0
wanted() { [[ -z $only ]] || [[ ",$only," == *",$1,"* ]]; }
say() { echo "$*" | tee -a "$log"; }

# Each step's share of the budget, in percent; a step never gets more than what is left.
declare -A share=(
  [glibc]=1 [nvidia-smi]=2 [doctor]=2 [risky]=10 [sanitize]=15 [check]=10
  [calibrate]=5 [tune]=10 [peers]=10 [run]=20 [gap]=8 [ncu]=15 [experiments]=4 [examples]=6
)
# The headline benchmark is most of a short budget; the checks on small shapes take seconds.
[[ $headline == 1 ]] && share[run]=40 share[tune]=4 share[calibrate]=3 share[check]=6 share[risky]=6 \
  share[gap]=10 share[ncu]=10
# The steps still to run (or to skip), each with its share.
declare -A pending=()
for name in "${!share[@]}"; do wanted "$name" && pending[$name]=1; done
share_of() { echo "${share[$1]:-5}"; }
pending_shares() {
  local name total=0
  for name in "${!pending[@]}"; do total=$((total + ${share[$name]})); done
  (( total > 0 )) && echo "$total" || echo 1
}
start=$SECONDS
step_end=0
# lim COMMAND...: runs one command of the current step under `timeout`, up to the step's end.
lim() {
  local left=$((step_end - SECONDS))
  (( left > 0 )) || return 124
  timeout -k 10 "$left" "$@"
}

# step NAME COMMAND...: runs and logs one step (a command, or a shell function whose commands
# run under `lim`), records its outcome and time; exit 124 (or 137) is a timeout.
step() {
  local name=$1; shift
  wanted "$name" || return 0
  local left=$((budget_s - (SECONDS - start)))
  # The step's share of what is left, among the steps still to run: time a step leaves unused
  # goes to the ones after it, and --only divides the whole budget among the steps it names.
  local limit=$((left * $(share_of "$name") / $(pending_shares)))
  unset "pending[$name]"
  (( limit < 10 )) && limit=10
  (( limit > left )) && limit=$left
  if (( limit <= 0 )); then
    skip "$name" "no time left in the ${budget}-minute budget"
    timed_out+=("$name (not started)")
    return 0
  fi
  say "== $name (limit ${limit}s): $*"
  local t0=$SECONDS rc
  step_end=$((SECONDS + limit))
  if declare -F "$1" >/dev/null; then
    "$@" 2>&1 | tee -a "$log"
  else
    lim "$@" 2>&1 | tee -a "$log"
  fi
  rc=${PIPESTATUS[0]}
  local dt=$((SECONDS - t0))
  if [[ $rc == 0 ]]; then
    summary+=("$(printf '%-11s ok         %4ds' "$name" "$dt")")
  elif [[ $rc == 124 || $rc == 137 ]]; then
    summary+=("$(printf '%-11s TIMED OUT  %4ds  (limit %ds, see %s)' "$name" "$dt" "$limit" "$log")")
    timed_out+=("$name")
    failed=1
  else
    summary+=("$(printf '%-11s FAILED     %4ds  (exit %d, see %s)' "$name" "$dt" "$rc" "$log")")
    failed=1
  fi
}
skip() {
  wanted "$1" || return 0
  unset "pending[$1]"
  say "-- $1: skipped: $2"
  summary+=("$(printf '%-11s skipped: %s' "$1" "$2")")
}

say "gpu-check on $slug ($kind), $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${budget} min"
step glibc ldd --version
if command -v nvidia-smi >/dev/null; then
  step nvidia-smi nvidia-smi
else
  skip nvidia-smi "nvidia-smi is not on PATH"
fi
step doctor "${H[@]}" doctor

# The rungs that could hang or fault a GPU process, each alone, so that a hang or a fault names
# its rung. The harness lists them (`list --risky`), and runs each of their rows in a child
# process with a time limit.
if [[ $kind != cuda ]]; then
  skip risky "no GPU"
else
  risky() {
    local id why ok=0
    while IFS=$'\t' read -r id why; do
      echo "-- risky: $id ($why)"
      lim "${H[@]}" check --device cuda --small --kernels "$id" || ok=$?
      [[ $ok == 124 || $ok == 137 ]] && return "$ok"
      # A GEMM at M = 100 and N = 40 issues TMA boxes that lie wholly outside the tensor: B's
      # past N, and A's for the second block of a cluster pair past M. The simulator fills
      # them with zeros and counts their bytes; no document says the hardware does both, and a
      # box whose bytes never arrive leaves its mbarrier waiting until the bounded wait traps.
      if [[ $id == gemm-* ]]; then
        lim "${H[@]}" check --device cuda --workload gemm --sizes 100x40x128 --kernels "$id" || ok=$?
        [[ $ok == 124 || $ok == 137 ]] && return "$ok"
      fi
    done < <("${H[@]}" list --risky)
    return $ok
  }
  step risky risky
fi

if [[ $kind != cuda ]]; then
  skip sanitize "no GPU"
elif ! command -v compute-sanitizer >/dev/null; then
  skip sanitize "compute-sanitizer is not on PATH"
else
  sanitize() {
    local tool
    for tool in memcheck racecheck; do
      echo "-- compute-sanitizer --tool $tool"
      lim compute-sanitizer --tool "$tool" --error-exitcode 1 --print-limit 20 \
        "${H[@]}" check --device cuda --small || return $?
    done
  }
  step sanitize sanitize
fi

step check "${H[@]}" check "${small[@]}"

# The examples of kernels brought by users (examples/rows.txt) as GPU rows at their small
# shapes: the lab's launch of a file it did not write (its own parameter list, a converting
# wrapper, constant memory, zeroed workspaces, TMA tensor maps encoded by the driver), each
# row in a child process. Without a GPU the tests run them in the simulator.
if [[ $kind != cuda ]]; then
  skip examples "no GPU: harness/tests/user_kernels.rs runs the examples in the simulator"
else
  examples() {
    local workload sizes spec n=0 rc=0
    while read -r workload sizes spec; do
      [[ -z $workload || $workload == \#* ]] && continue
      n=$((n + 1))
      echo "-- examples: $spec"
      lim "${H[@]}" run --device cuda --workload "$workload" --sizes "$sizes" --kernel "$spec" \
        --out "$dir/examples/$n" || rc=$?
      [[ $rc == 124 || $rc == 137 ]] && return "$rc"
    done < examples/rows.txt
    return $rc
  }
  step examples examples
fi
if [[ $build != release ]]; then
  skip calibrate "a $build build of the harness measures its own unoptimized code, not the machine"
elif [[ $smoke == 1 ]]; then
  step calibrate "${H[@]}" calibrate --quick
else
  step calibrate "${H[@]}" calibrate
fi

# A budget under 20 minutes leaves out what the run does not need, unless --only names it: the
# tuning and the experiments each ran out of their share of a 9-minute budget on an H200
# (25 s and 27 s) and left nothing, while the benchmark itself ran out of its.
short_skip() { [[ $headline == 1 && ",$only," != *",$1,"* ]]; }

# Tuning before the run, so rung 09 runs with the configuration chosen on this GPU.
if [[ $kind != cuda ]]; then
  skip tune "no GPU: rung 09's tile shapes are tuned by timing them on a GPU"
elif short_skip tune; then
  skip tune "a ${budget}-minute budget goes to the benchmark (rung 09 runs its default tiles; --only tune runs it)"
else
  # A short budget times the configurations as the headline benchmark times its rows (fewer,
  # shorter samples): with the default timing `tune --small` used up its share of a 9-minute
  # budget partway through the grid.
  tune_args=("${small[@]}")
  [[ $headline == 1 ]] && tune_args+=(--config tools/gpu-headline.toml)
  step tune "${H[@]}" tune "${tune_args[@]}"
fi

# PyTorch peers before the run, so the run's tables include them.
if [[ $kind != cuda ]]; then
  skip peers "no GPU: PyTorch peers are GPU rows"
elif ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  skip peers "PyTorch with CUDA is not importable by python3"
else
  peers_step() {
    lim "${H[@]}" shapes --device cuda "${bench[@]}" > "$dir/shapes.json" &&
      mkdir -p "$out/peers" &&
      lim python3 tools/torch_peers.py --shapes "$dir/shapes.json" --out "$out/peers/$slug.json"
  }
  step peers peers_step
fi

# A line per row with the time it took, and one per shape: what the next budget is planned from.
step run "${H[@]}" run --verbose "${bench[@]}"
# A run cut off by its limit leaves the shapes it finished in a `-unfinished` folder.
for kept in "$out"/runs/*-unfinished "$out"/runs/*-unfinished-[0-9]*; do
  [[ -d $kept ]] || continue
  say "-- run: the shapes it finished are in $kept (\`harness report\` or \`harness publish\` it)"
  summary+=("$(printf '%-11s kept       %s' run "$kept")")
done

# Questions the walkthroughs leave open, one line each: a name, the GPU shapes, then the
# arguments of `harness run`. Each run goes to its own folder beside the log, so runs/latest
# stays the benchmark's.
experiments=(
  # restrict-unroll/README.md, "The next experiment": convolution rung 04 with its filter in
  # shared memory instead of __constant__, on both layers.
  "conv04-filter-in-smem 10000x1x4x86x86x7,10000x4x16x40x40x7 --workload conv --kernels conv-direct,conv-fused,conv-restrict-unroll --kernel restrict-unroll/kernels/conv/04_restrict_unroll.cu:conv_restrict_unroll,define=KS=K,define=CIN=C,define=MOUT=M,block=256,grid=(cdiv(B*HO*WO,256),cdiv(M,16)),id=conv-04-filter-in-smem"
)
experiment_runs() {
  local line name sizes args ok=0
  for line in "${experiments[@]}"; do
    # Split into words without glob expansion (the specs hold `*`).
    read -r -a args <<< "$line"
    name=${args[0]} sizes=${args[1]} args=("${args[@]:2}")
    rm -rf "$dir/experiment-$name"
    echo "-- experiment $name"
    if [[ $kind == cuda ]]; then
      lim "${H[@]}" run --config tools/gpu-headline.toml --out "$dir/experiment-$name" \
        --sizes "$sizes" "${args[@]}" || ok=$?
    else
      lim "${H[@]}" run --out "$dir/experiment-$name" --device sim --small "${args[@]}" || ok=$?
    fi
    [[ $ok == 124 || $ok == 137 ]] && return "$ok"
  done
  return $ok
}
if short_skip experiments; then
  skip experiments "a ${budget}-minute budget goes to the benchmark (--only experiments runs them)"
else
  step experiments experiment_runs
fi

# Where the rungs that miss their speed targets lose to the kernels they are measured against:
# one launch of each at the shape its target is set at, profiled with the sections that say
# why (issue-slot use, eligible warps, pipe use, occupancy, memory) and the per-instruction
# warp-stall samples, summarized side by side by tools/ncu_gap.py. One line per profile: a name,
# the workload, the shape, the kernels (where the harness checks them against a GPU reference
# at that shape, as attention's cuBLAS rows, its kernels are profiled too).
gap_profiles=(
  "gemm gemm 4096 gemm-mma-ldmatrix,gemm-mma-128x256,gemm-mma-hoisted,gemm-wgmma-l2-order,gemm-wgmma-cluster,gemm-wgmma-overlap,gemm-wgmma-cluster-cta,cublas-fp16,cublas-bf16"
  "attention attention 4x16x4096x128 attn-flash2-mma-fp16,attn-flash2-br128-fp16,attn-flash-wgmma-fp16,attn-flash-wgmma-overlap-fp16"
)
gap_sections=(
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats
  --section InstructionStats --section SourceCounters
)
# gap_report NAME: the summary of $dir/gap-NAME.ncu-rep, with its pages kept beside it.
gap_report() {
  local rep=$dir/gap-$1
  ncu --import "$rep.ncu-rep" --page details --csv > "$rep-details.csv" || return 1
  if ! ncu --import "$rep.ncu-rep" --page source --csv --print-source sass > "$rep-source.csv"; then
    echo "-- gap $1: ncu could not export the source page; the summary has no SASS lines"
    rm -f "$rep-source.csv"
  fi
  local pages=("$rep-details.csv")
  [[ -s $rep-source.csv ]] && pages+=("$rep-source.csv")
  python3 tools/ncu_gap.py "${pages[@]}" > "$rep.md"
}
gap_profile() {
  local line name w size ids ok=0
  for line in "${gap_profiles[@]}"; do
    read -r name w size ids <<< "$line"
    echo "-- gap $name: $w $size: $ids"
    lim ncu --clock-control none "${gap_sections[@]}" --import-source no \
      --export "$dir/gap-$name" --force-overwrite \
      "${H[@]}" check --device cuda --workload "$w" --sizes "$size" --kernels "$ids" || ok=$?
    [[ $ok == 124 || $ok == 137 ]] && return "$ok"
    gap_report "$name" || ok=1
  done
  # PyTorch's attention at the same shape: the kernel the attention target is set against.
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "-- gap attention-torch: scaled_dot_product_attention (its flash backend), FP16, 4x16x4096x128"
    lim ncu --clock-control none "${gap_sections[@]}" --import-source no \
      --kernel-name regex:'flash|fmha|attention|sdpa' \
      --export "$dir/gap-attention-torch" --force-overwrite python3 -c '
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(4, 16, 4096, 128, device="cuda", dtype=torch.half) for _ in range(3))
# The backend of the torch-sdpa-flash rows: left to choose, PyTorch may run cuDNN instead.
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()' || ok=$?
    [[ $ok == 124 || $ok == 137 ]] && return "$ok"
    gap_report attention-torch || ok=1
  fi
  return $ok
}
if [[ $kind != cuda ]]; then
  skip gap "no GPU"
elif ! command -v ncu >/dev/null; then
  skip gap "ncu (Nsight Compute) is not on PATH"
else
  step gap gap_profile
fi

if [[ $kind != cuda ]]; then
  skip ncu "no GPU"
elif ! command -v ncu >/dev/null; then
  skip ncu "ncu (Nsight Compute) is not on PATH"
else
  # The metrics, one list shared with the summary that reads them (GMMA from compute 9.0 on).
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
  major=${cc%%.*}
  metrics=$(python3 tools/ncu_summary.py --metrics "${major:-0}")
  profile() {
    local w size ok=0
    # `check` runs each kernel's plan once, so each launch is profiled once. Never touch the
    # clocks: --clock-control none. WarpStateStats: the stall reasons.
    while read -r w size; do
      # A network's launches are its layers' rungs, profiled with their own workloads.
      [[ $w == cnn || $w == encoder ]] && continue
      [[ $smoke == 1 ]] && size=$("${H[@]}" shapes --device cuda --workload "$w" --small --headline | cut -d' ' -f2)
      echo "-- ncu: $w $size"
      lim ncu --clock-control none --metrics "$metrics" --section WarpStateStats \
        --export "$dir/ncu-$w" --force-overwrite \
        "${H[@]}" check --device cuda --workload "$w" --sizes "$size" || ok=$?
      [[ $ok == 124 || $ok == 137 ]] && return "$ok"
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
say "  total       $((SECONDS - start))s of the ${budget}-minute budget"
if (( ${#timed_out[@]} > 0 )); then
  say "timed out: ${timed_out[*]}"
fi
exit $failed
