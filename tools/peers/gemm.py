"""GEMM peers: torch.matmul in FP32 (TF32 off), TF32, FP16 and BF16 (FP32 accumulation)."""

from contextlib import contextmanager

from .common import Peer, uniform


def tf32(torch, allowed):
    @contextmanager
    def switch():
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = allowed
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old

    return switch


def peers(shape, torch, device):
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = uniform(torch, (m, k), device)
    b = uniform(torch, (k, n), device)
    ref = a.double() @ b.double()
    yield Peer(
        "torch-matmul-fp32",
        "fp32",
        "torch.matmul, FP32 inputs, TF32 off (cuBLAS SGEMM)",
        lambda: torch.matmul(a, b),
        ref,
        tf32(torch, False),
    )
    yield Peer(
        "torch-matmul-tf32",
        "tf32",
        "torch.matmul, FP32 inputs, allow_tf32 = True",
        lambda: torch.matmul(a, b),
        ref,
        tf32(torch, True),
    )
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        ah, bh = a.to(dtype), b.to(dtype)
        yield Peer(
            f"torch-matmul-{name}",
            name,
            f"torch.matmul on {name.upper()} tensors (FP32 accumulation, {name.upper()} out)",
            lambda ah=ah, bh=bh: torch.matmul(ah, bh),
            ref,
        )
