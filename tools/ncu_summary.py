#!/usr/bin/env python3
"""Summarize an Nsight Compute CSV (`ncu --csv --page raw`) as a Markdown table per kernel.

    python3 tools/ncu_summary.py results/<gpu>/ncu-gemm.csv > results/<gpu>/ncu-gemm.md

One row per profiled launch: the kernel, its duration, DRAM and SM throughput (% of peak),
achieved occupancy and shared-memory bank conflicts (loads and stores). The columns are the
metrics `tools/gpu-check.sh` asks ncu for; a metric the CSV lacks shows as `-`.
"""

import csv
import sys

COLUMNS = [
    ("gpu__time_duration.sum", "time"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM % peak"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM % peak"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy %"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "smem ld bank conflicts"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "smem st bank conflicts"),
]


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
    names = ["#", "kernel"] + [label for _, label in COLUMNS]
    print("| " + " | ".join(names) + " |")
    print("|" + "---|" * 2 + "---:|" * len(COLUMNS))
    for i, r in enumerate(records):
        cells = [str(i + 1), f"`{r.get('Kernel Name', '?')}`"]
        for metric, _ in COLUMNS:
            v = r.get(metric, "")
            unit = r["__units"].get(metric, "")
            cells.append(f"{v} {unit}".strip() if v else "-")
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
