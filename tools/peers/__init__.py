"""PyTorch peer rows, one module per workload of the lab.

Each module defines `peers(shape, torch, device)`, yielding `Peer`s for one harness shape
(the dict of a results file's `shape`, such as {"workload": "gemm", "m": 4096, "n": 4096,
"k": 4096}). `tools/torch_peers.py` times them all the same way and writes the JSON the
harness merges into its tables as peer rows.
"""
