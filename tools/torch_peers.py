#!/usr/bin/env python3
"""PyTorch peer rows for the lab's tables, measured on the same GPU as the harness's rows.

    harness shapes --device cuda > shapes.json
    python3 tools/torch_peers.py --shapes shapes.json --out target/lab/peers/<gpu>.json

For every shape it times each peer of `tools/peers/<workload>.py` (torch.matmul, F.linear,
conv2d, scaled_dot_product_attention, ...) with CUDA events: warm-up, then many samples, each
after flushing L2 (the harness's rule), median and percentiles reported. Each peer's output is
checked against a float64 computation of the same call, and the error is written beside the
time; the harness judges it with the bound of the peer's precision. Inputs are uniform in
[-1, 1] like the harness's, drawn by torch (not the same values). `harness run` and
`harness report` merge the JSON into the tables as rows marked `peer`.
"""

import argparse
import importlib
import json
import math
import sys
import time
from pathlib import Path

SCHEMA_VERSION = 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", required=True, type=Path, help="output of `harness shapes`")
    p.add_argument("--out", required=True, type=Path, help="peers JSON to write")
    p.add_argument("--device", default="cuda", help="cuda (default), or cpu for a smoke test")
    p.add_argument("--warmup-ms", type=float, default=200.0)
    p.add_argument("--samples", type=int, default=25)
    p.add_argument("--max-row-ms", type=float, default=5000.0)
    p.add_argument("--workloads", default="", help="comma-separated subset")
    return p.parse_args()


class Timer:
    """CUDA events around each call (wall clock on the CPU), L2 flushed before each sample."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        self.cuda = device.startswith("cuda")
        if self.cuda:
            l2 = torch.cuda.get_device_properties(device).L2_cache_size
            self.flush = torch.empty(max(2 * l2, 8 << 20), dtype=torch.uint8, device=device)

    def once(self, fn):
        torch = self.torch
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        self.flush.fill_(1)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def samples(self, fn, warmup_ms, samples, max_row_ms):
        t0 = time.perf_counter()
        one = math.inf
        while True:
            one = min(one, self.once(fn))
            if (time.perf_counter() - t0) * 1e3 >= warmup_ms:
                break
        n = max(3, min(samples, int(max_row_ms / max(one, 1e-3))))
        return [self.once(fn) for _ in range(n)]


def percentile(sorted_v, p):
    # As the harness computes it (harness/src/timing.rs): held between the two samples it
    # interpolates, so that equal samples give exactly that value and p10 never exceeds p90.
    x = p * (len(sorted_v) - 1)
    i = int(x)
    f = x - i
    if i + 1 >= len(sorted_v):
        return sorted_v[i]
    a, b = sorted_v[i], sorted_v[i + 1]
    return min(max(a + (b - a) * f, a), b)


def rel_error(torch, out, ref):
    out = out.double().reshape(ref.shape)
    if not torch.isfinite(out).all():
        return math.inf
    den = torch.linalg.vector_norm(ref).item()
    num = torch.linalg.vector_norm(out - ref).item()
    return num / den if den > 0 else num


def describe(torch, device):
    parts = [f"torch {torch.__version__}"]
    if device.startswith("cuda"):
        parts.append(f"CUDA {torch.version.cuda}")
        if torch.backends.cudnn.is_available():
            parts.append(f"cuDNN {torch.backends.cudnn.version()}")
    return ", ".join(parts)


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        print("torch_peers: PyTorch is not installed here; no peer rows.", file=sys.stderr)
        return 3
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("torch_peers: PyTorch sees no GPU; no peer rows.", file=sys.stderr)
        return 3
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    shapes = json.loads(args.shapes.read_text())
    only = {w for w in args.workloads.split(",") if w}
    timer = Timer(torch, args.device)
    torch.manual_seed(20251122)
    rows = []
    for entry in shapes:
        shape, label = entry["shape"], entry["label"]
        workload = shape["workload"]
        if only and workload not in only:
            continue
        try:
            module = importlib.import_module(f"peers.{workload}")
        except ModuleNotFoundError:
            print(f"{workload}: no peers module; skipped")
            continue
        print(f"{workload} {label}")
        for peer in module.peers(shape, torch, args.device):
            try:
                with peer.context():
                    out = peer.fn()
                    err = rel_error(torch, out, peer.reference)
                    del out
                    samples = timer.samples(peer.fn, args.warmup_ms, args.samples, args.max_row_ms)
            except Exception as e:  # a peer that cannot run here is reported, not fatal
                print(f"  {peer.id:<28} error: {type(e).__name__}: {e}")
                rows.append(dict(workload=workload, shape=label, id=peer.id,
                                 precision=peer.precision, summary=peer.summary,
                                 error=f"{type(e).__name__}: {e}"))
                continue
            s = sorted(samples)
            median = percentile(s, 0.5)
            print(f"  {peer.id:<28} {median:10.4f} ms  rel error {err:.1e}")
            rows.append(dict(
                workload=workload, shape=label, id=peer.id, precision=peer.precision,
                summary=peer.summary, samples_ms=samples, median_ms=median,
                p10_ms=percentile(s, 0.1), p90_ms=percentile(s, 0.9), rel_error=err,
            ))
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    doc = dict(
        schema_version=SCHEMA_VERSION,
        tool=describe(torch, args.device),
        device=name,
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        rows=rows,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(args.out)
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
