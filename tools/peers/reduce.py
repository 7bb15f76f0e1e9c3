"""Sum peers: torch.sum, the reduction PyTorch's own kernels (and CUB's design) make fast."""

from .common import Peer


def peers(shape, torch, device):
    n = shape["n"]
    # The harness draws a sum's terms in [0, 1] (no cancellation): the same range here.
    x = torch.rand(n, device=device, dtype=torch.float32)
    ref = x.double().sum().reshape(1)

    yield Peer(
        "torch-sum",
        "fp32",
        "torch.sum of the FP32 vector (PyTorch's reduction kernel, FP32 accumulation)",
        lambda: torch.sum(x).reshape(1),
        ref,
    )
