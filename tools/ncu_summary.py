#!/usr/bin/env python3
"""Summarize an Nsight Compute CSV (`ncu --csv --page raw`) as a Markdown table per kernel.

    python3 tools/ncu_summary.py results/<gpu>/ncu-gemm.csv > results/<gpu>/ncu-gemm.md

One row per profiled launch: the kernel, its duration, DRAM and SM throughput (% of peak), DRAM
and L2 bytes, achieved occupancy, tensor-pipe utilisation (mma.sync's HMMA pipe, and wgmma's
on Hopper), shared-memory bank conflicts per instruction kind (LDS loads, STS stores, LDSM
`ldmatrix`, LDGSTS `cp.async`), how global loads coalesce (requests and the 32-byte sectors
they touch; the L1's data-pipe wavefronts in all and those of shared memory, whose difference
is what global accesses took, the lines the speed-of-light model's L1 ceiling counts), and
the three reasons warps stalled most (cycles per issued instruction, from the WarpStateStats
section). The columns are the metrics
`tools/gpu-check.sh` asks ncu for (`--metrics MAJOR` prints them for a GPU of that compute
capability); a metric the CSV lacks shows as `-`, and the table is followed by the list of
metrics asked for but absent: ncu leaves out, without an error, a metric the GPU does not
have, as it did for the LDS/STS conflict and GMMA metrics of an earlier list on an H200.

    python3 tools/ncu_summary.py --metrics 9
"""

import csv
import sys

# Shared-memory bank conflicts: LDS and STS as the L1TEX unit counts them, LDSM (ldmatrix) and
# LDGSTS (cp.async) per SASS instruction kind.
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_"
SASS_CONFLICTS = "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_"
# wgmma's pipe, from compute capability 9.0 on.
GMMA = "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"

COLUMNS = [
    ("gpu__time_duration.sum", "time"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM % peak"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM % peak"),
    ("dram__bytes_read.sum", "DRAM read"),
    ("dram__bytes_write.sum", "DRAM write"),
    ("lts__t_bytes.sum", "L2 bytes"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy %"),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "HMMA pipe %"),
    (GMMA, "GMMA pipe %"),
    (CONFLICTS + "ld.sum", "LDS conflicts"),
    (CONFLICTS + "st.sum", "STS conflicts"),
    (SASS_CONFLICTS + "ldsm.sum", "LDSM conflicts"),
    (SASS_CONFLICTS + "ldgsts.sum", "LDGSTS conflicts"),
    ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "LDG requests"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "LDG sectors"),
    ("l1tex__data_pipe_lsu_wavefronts.sum", "L1 wavefronts"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "shared wavefronts"),
]


def metrics(major):
    """The metrics to ask ncu for on a GPU of compute capability `major`.x."""
    return [m for m, _ in COLUMNS if m != GMMA or major >= 9]

# WarpStateStats: smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
TOP_STALLS = 3


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def top_stalls(record):
    """The reasons warps stalled most, as `reason value`, largest first."""
    stalls = []
    for name, value in record.items():
        if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX):
            v = number(value)
            reason = name[len(STALL_PREFIX) : -len(STALL_SUFFIX)]
            # `selected` is the issue itself, not a stall.
            if v is not None and v > 0 and reason != "selected":
                stalls.append((v, reason))
    stalls.sort(reverse=True)
    return ", ".join(f"{r} {v:.2f}" for v, r in stalls[:TOP_STALLS]) or "-"


def rows(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own notes first
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        return [], []
    units = next(reader, None)  # the second line holds units
    return header, [dict(zip(header, r)) | {"__units": dict(zip(header, units or []))} for r in reader]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--metrics" and sys.argv[2].isdigit():
        print(",".join(metrics(int(sys.argv[2]))))
        return 0
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    header, records = rows(sys.argv[1])
    if not records:
        print(f"no profiled launches in {sys.argv[1]}")
        return 0
    names = ["#", "kernel"] + [label for _, label in COLUMNS] + ["top stalls (cycles/issue)"]
    print("| " + " | ".join(names) + " |")
    print("|" + "---|" * 2 + "---:|" * len(COLUMNS) + "---|")
    for i, r in enumerate(records):
        cells = [str(i + 1), f"`{r.get('Kernel Name', '?')}`"]
        for metric, _ in COLUMNS:
            v = r.get(metric, "")
            unit = r["__units"].get(metric, "")
            cells.append(f"{v} {unit}".strip() if v else "-")
        cells.append(top_stalls(r))
        print("| " + " | ".join(cells) + " |")
    absent = [m for m, _ in COLUMNS if m not in header and (m != GMMA or has_gmma(records))]
    if absent:
        print("\nAsked for but absent from ncu's output: " + ", ".join(f"`{m}`" for m in absent))
    return 0


def has_gmma(records):
    """Whether the launches ran on a GPU with wgmma (compute capability 9.0 or newer)."""
    for r in records:
        cc = r.get("device__attribute_compute_capability_major", "")
        if number(cc) is not None:
            return number(cc) >= 9
    return True


if __name__ == "__main__":
    sys.exit(main())
