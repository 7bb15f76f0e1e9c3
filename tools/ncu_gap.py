#!/usr/bin/env python3
"""Nsight Compute's view of the fastest rungs beside cuBLAS's kernels, side by side.

    python3 tools/ncu_gap.py DETAILS.csv [SOURCE.csv] > gap.md

DETAILS.csv is `ncu --import R --page details --csv` and SOURCE.csv is
`ncu --import R --page source --csv --print-source sass` of the same report (profiled with the
SourceCounters section). `tools/gpu-check.sh`'s `gap` step profiles the rungs that miss their
speed targets, with the library kernels they are measured against, at the shape the targets
are set at, and writes this summary beside the report. It answers "why is this rung slower than
cuBLAS" in three parts:

1. one table, a column per profiled launch and a row per metric of every section collected
   (throughputs, issue-slot use, eligible warps, occupancy, pipe use, cache hit rates...), so
   that a rung's column reads against the library's;
2. for each launch, the findings of ncu's rules that estimate a speedup, largest first;
3. for each launch, the SASS instructions where warps were sampled stalled most, and the
   samples by opcode: where the time goes, instruction by instruction.

The CSV layouts are those of Nsight Compute 2023 and later: the details page has one row per
metric (and one per rule finding, in the `Rule ...` columns); the source page has a header row
with `Address`, `Source` and `Warp Stall Sampling (All Samples)`, one row per SASS instruction,
and for a report of several launches one such block per launch. A part whose columns are not
found says so instead of failing, and the CSVs are kept beside the summary.
"""

import csv
import re
import sys
from collections import OrderedDict, defaultdict

TOP_LINES = 12
TOP_OPCODES = 8
TOP_RULES = 5
LABEL_CHARS = 40


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def csv_rows(path):
    with open(path, newline="") as f:
        # ncu prints its own notes (==PROF==, ==WARNING==) before and between the CSV lines.
        return list(csv.reader(l for l in f if not l.startswith("==")))


# Library kernels whose function name is a generic wrapper: their first template argument names
# the kernel (`cutlass::Kernel2<cutlass_80_tensorop_..._256x128_32x3_nn_align8>`).
WRAPPERS = {"Kernel", "Kernel2", "device_kernel", "kernel"}


def short(name):
    """A launch's column label: the function's name without templates, arguments, namespaces."""
    base = re.split(r"[<(]", name, maxsplit=1)[0].strip()
    base = base.split("::")[-1].split()[-1] if base else name
    if base in WRAPPERS and "<" in name:
        base = re.split(r"[,<>( ]", name.split("<", 1)[1].strip(), maxsplit=1)[0] or base
        base = base.split("::")[-1]
    return base if len(base) <= LABEL_CHARS else base[: LABEL_CHARS - 3] + "..."


class Launch:
    def __init__(self, ident, name, block, grid):
        self.ident, self.name, self.block, self.grid = ident, name, block, grid
        self.metrics = {}
        self.rules = []


def details(path):
    """Launches in report order, each with its metrics and rule findings."""
    rows = csv_rows(path)
    if not rows:
        return [], []
    header = rows[0]
    col = {h: i for i, h in enumerate(header)}
    needed = ["ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
    missing = [h for h in needed if h not in col]
    if missing:
        raise SystemExit(f"{path}: not an ncu details CSV (no column {', '.join(missing)})")

    def get(r, h):
        i = col.get(h)
        return r[i] if i is not None and i < len(r) else ""

    launches = OrderedDict()
    keys = OrderedDict()  # (section, metric, unit), in the order ncu prints them
    for r in rows[1:]:
        if len(r) < len(needed):
            continue
        ident = get(r, "ID")
        launch = launches.get(ident)
        if launch is None:
            launch = Launch(ident, get(r, "Kernel Name"), get(r, "Block Size"), get(r, "Grid Size"))
            launches[ident] = launch
        metric = get(r, "Metric Name")
        if metric:
            key = (get(r, "Section Name"), metric, get(r, "Metric Unit"))
            keys.setdefault(key, None)
            launch.metrics[key] = get(r, "Metric Value")
        rule = get(r, "Rule Name")
        if rule and get(r, "Rule Description"):
            speedup = number(get(r, "Estimated Speedup"))
            launch.rules.append((speedup, rule, " ".join(get(r, "Rule Description").split())))
    return list(launches.values()), list(keys)


def metric_table(launches, keys):
    out = ["| section | metric | " + " | ".join(f"#{l.ident} `{short(l.name)}`" for l in launches) + " |"]
    out.append("|---|---|" + "---:|" * len(launches))
    for section, metric, unit in keys:
        label = f"{metric} ({unit})" if unit else metric
        cells = [l.metrics.get((section, metric, unit), "-") or "-" for l in launches]
        out.append(f"| {section} | {label} | " + " | ".join(cells) + " |")
    return out


def rule_lines(launch):
    found = [r for r in launch.rules if r[0] is not None and r[0] > 0]
    found.sort(key=lambda r: -r[0])
    if not found:
        return ["No rule estimated a speedup."]
    return [f"- {name} (est. {speedup:.0f}%): {text}" for speedup, name, text in found[:TOP_RULES]]


STALL_PREFIXES = ("smsp__pcsamp_warps_issue_stalled_", "stall_")


def stall_reason(column):
    for p in STALL_PREFIXES:
        if column.startswith(p):
            return column[len(p) :]
    return None


def opcode(source):
    """The SASS opcode of a source-page line: `@!P0 LDGSTS.E.BYPASS.128 [...]` is LDGSTS."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


class Block:
    def __init__(self, title):
        self.title = title
        self.lines = []  # (address, source, samples, {reason: samples})


def source_blocks(path):
    """One block per launch: its SASS lines with their stall samples."""
    blocks, header, title = [], None, ""
    for r in csv_rows(path):
        cells = [c.strip() for c in r]
        samples_in = next((i for i, c in enumerate(cells) if c.startswith("Warp Stall Sampling (All")), None)
        if "Source" in cells and samples_in is not None:
            header, sample_col = cells, samples_in
            col = {h: i for i, h in enumerate(header)}
            stalls = [
                (i, stall_reason(h))
                for i, h in enumerate(header)
                if stall_reason(h) and not h.endswith("_not_issued")
            ]
            blocks.append(Block(title))
            title = ""
            continue
        if header is None or len(r) != len(header):
            # A line that is not an instruction of the current block: a launch's title.
            if any(cells):
                title = " ".join(c for c in cells if c)
                header = None
            continue
        samples = number(r[sample_col]) or 0
        by_reason = {}
        for i, reason in stalls:
            v = number(r[i]) or 0
            if v > 0 and reason != "selected":
                by_reason[reason] = by_reason.get(reason, 0) + v
        address = r[col["Address"]] if "Address" in col else r[0]
        blocks[-1].lines.append((address, r[col["Source"]].strip(), samples, by_reason))
    return blocks


def sass_lines(block):
    total = sum(l[2] for l in block.lines)
    if total == 0:
        return ["No warp-stall samples on this launch's SASS."]
    by_op = defaultdict(float)
    for _, source, samples, _ in block.lines:
        by_op[opcode(source)] += samples
    ops = sorted(by_op.items(), key=lambda kv: -kv[1])[:TOP_OPCODES]
    out = [
        f"{total:.0f} samples; by opcode: "
        + ", ".join(f"{op} {100 * v / total:.0f}%" for op, v in ops),
        "",
        "| address | instruction | samples | share | top stall reasons |",
        "|---|---|---:|---:|---|",
    ]
    for address, source, samples, reasons in sorted(block.lines, key=lambda l: -l[2])[:TOP_LINES]:
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:2]
        why = ", ".join(f"{k} {100 * v / samples:.0f}%" for k, v in top) if samples else "-"
        out.append(f"| {address} | `{source}` | {samples:.0f} | {100 * samples / total:.1f}% | {why or '-'} |")
    return out


def launch_of(block, index, launches):
    """The launch a source block belongs to: the one its title names, else the same position
    (both pages list the report's launches in order)."""
    named = [l for l in launches if block.title and short(l.name).rstrip(".") in block.title]
    if len(named) == 1:
        return named[0]
    return launches[index] if index < len(launches) else None


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    launches, keys = details(argv[1])
    if not launches:
        print(f"no profiled launches in {argv[1]}")
        return 0
    out = ["## Sections, launch by launch", ""]
    out += [f"- #{l.ident} `{l.name}`, block {l.block}, grid {l.grid}" for l in launches]
    out += [""] + metric_table(launches, keys)
    out += ["", "## What ncu's rules estimate", ""]
    for l in launches:
        out += [f"### #{l.ident} `{short(l.name)}`", ""] + rule_lines(l) + [""]
    if len(argv) == 3:
        out += ["## Where warps wait: SASS lines by warp-stall samples", ""]
        blocks = source_blocks(argv[2])
        if not blocks:
            out.append(f"No SASS lines with warp-stall samples found in {argv[2]}.")
        for i, block in enumerate(blocks):
            launch = launch_of(block, i, launches)
            name = f"#{launch.ident} `{short(launch.name)}`" if launch else f"`{block.title}`"
            out += [f"### {name}", ""] + sass_lines(block) + [""]
    print("\n".join(out).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
