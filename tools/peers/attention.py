"""Attention peers: torch scaled_dot_product_attention with the flash backend (FP16, BF16) and
the math backend (FP32, the S x S matrix materialized, as the lab's naive rung does)."""

from contextlib import contextmanager

from .common import Peer, uniform


def backend(torch, name):
    """Restricts SDPA to one backend; a backend that cannot take the inputs raises, and the
    row is reported as an error rather than silently measuring another one."""

    @contextmanager
    def switch():
        from torch.nn.attention import SDPBackend, sdpa_kernel

        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old

    return switch


def reference(torch, q, k, v, causal):
    """O in float64, a few heads at a time so that their S x S scores stay within 2 GiB."""
    b, h, s, _ = q.shape
    per = max(1, (2 << 30) // (s * s * 8))
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    f = torch.nn.functional.scaled_dot_product_attention
    for bi in range(b):
        for h0 in range(0, h, per):
            sl = (slice(bi, bi + 1), slice(h0, h0 + per))
            out[sl] = f(q[sl].double(), k[sl].double(), v[sl].double(), is_causal=causal)
    return out


def peers(shape, torch, device):
    b, h, s, d, causal = shape["b"], shape["h"], shape["s"], shape["d"], shape["causal"]
    q, k, v = (uniform(torch, (b, h, s, d), device) for _ in range(3))
    ref = reference(torch, q, k, v, causal)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    mask = ", causal" if causal else ""
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        qh, kh, vh = q.to(dtype), k.to(dtype), v.to(dtype)
        yield Peer(
            f"torch-sdpa-flash-{name}",
            name,
            f"scaled_dot_product_attention, flash backend, {name.upper()} Q/K/V{mask}",
            lambda qh=qh, kh=kh, vh=vh: sdpa(qh, kh, vh, is_causal=causal),
            ref,
            backend(torch, "FLASH_ATTENTION"),
        )
    yield Peer(
        "torch-sdpa-math-fp32",
        "fp32",
        f"scaled_dot_product_attention, math backend (S x S in memory), FP32, TF32 off{mask}",
        lambda: sdpa(q, k, v, is_causal=causal),
        ref,
        backend(torch, "MATH"),
    )
