"""Convolution peers: F.conv2d (cuDNN) in FP32 (TF32 off), TF32 and FP16, NCHW, stride 1, no padding."""

from contextlib import contextmanager

from .common import Peer, uniform


def cudnn_tf32(torch, allowed):
    @contextmanager
    def switch():
        old = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = allowed
        try:
            yield
        finally:
            torch.backends.cudnn.allow_tf32 = old

    return switch


def peers(shape, torch, device):
    b, c, m, h, w, k = (shape[d] for d in ("b", "c", "m", "h", "w", "k"))
    conv2d = torch.nn.functional.conv2d
    x = uniform(torch, (b, c, h, w), device)
    f = uniform(torch, (m, c, k, k), device)
    # cudnn.benchmark would time several algorithms on the first call: keep the default
    # heuristic, which is what a plain conv2d call gets.
    ref = conv2d(x.double(), f.double())
    yield Peer(
        "torch-conv2d-fp32",
        "fp32",
        "F.conv2d, FP32, cudnn.allow_tf32 = False (cuDNN)",
        lambda: conv2d(x, f),
        ref,
        cudnn_tf32(torch, False),
    )
    yield Peer(
        "torch-conv2d-tf32",
        "tf32",
        "F.conv2d, FP32 inputs, cudnn.allow_tf32 = True (PyTorch's default)",
        lambda: conv2d(x, f),
        ref,
        cudnn_tf32(torch, True),
    )
    xh, fh = x.half(), f.half()
    yield Peer(
        "torch-conv2d-fp16",
        "fp16",
        "F.conv2d on FP16 tensors (cuDNN, FP32 accumulation, FP16 out)",
        lambda: conv2d(xh, fh),
        ref,
    )
