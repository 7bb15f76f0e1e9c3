#!/usr/bin/env python3
"""Summarize an Nsight Compute CSV (`ncu --csv --page raw`) as a Markdown table per kernel.

    python3 tools/ncu_summary.py results/<gpu>/ncu-gemm.csv > results/<gpu>/ncu-gemm.md

One row per profiled launch: the kernel, its duration, DRAM and SM throughput (% of peak), DRAM
and L2 bytes, achieved occupancy, tensor-pipe utilisation (mma.sync's HMMA pipe, and wgmma's
on Hopper), shared-memory bank conflicts per instruction kind (LDS loads, STS stores, LDSM
`ldmatrix`, LDGSTS `cp.async`), and the three reasons warps stalled most (cycles per issued
instruction, from the WarpStateStats section). The columns are the metrics
`tools/gpu-check.sh` asks ncu for; a metric the CSV lacks shows as `-`.
"""

import csv
import sys

CONFLICTS = "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_"

COLUMNS = [
    ("gpu__time_duration.sum", "time"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM % peak"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM % peak"),
    ("dram__bytes_read.sum", "DRAM read"),
    ("dram__bytes_write.sum", "DRAM write"),
    ("lts__t_bytes.sum", "L2 bytes"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy %"),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "HMMA pipe %"),
    ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", "GMMA pipe %"),
    (CONFLICTS + "ld.sum", "LDS conflicts"),
    (CONFLICTS + "st.sum", "STS conflicts"),
    (CONFLICTS + "ldsm.sum", "LDSM conflicts"),
    (CONFLICTS + "ldgsts.sum", "LDGSTS conflicts"),
]

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
