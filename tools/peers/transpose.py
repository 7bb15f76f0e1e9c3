"""Transpose peers: x.t().contiguous(), PyTorch's copy of a transposed view into new memory."""

from .common import Peer, uniform


def peers(shape, torch, device):
    m, n = shape["m"], shape["n"]
    x = uniform(torch, (m, n), device)
    ref = x.double().t().contiguous()

    yield Peer(
        "torch-transpose",
        "fp32",
        "x.t().contiguous() of the FP32 matrix (PyTorch's strided copy kernel)",
        lambda: x.t().contiguous(),
        ref,
    )
