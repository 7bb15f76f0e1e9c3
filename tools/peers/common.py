"""What a peer row is, and the inputs every peer uses."""

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Peer:
    """One framework call measured beside the lab's rows."""

    id: str  # kebab-case, unique within its workload: torch-matmul-fp32
    precision: str  # fp32, tf32, fp16 or bf16: the harness judges the error with its bound
    summary: str  # one line: what is called and how
    fn: Callable[[], Any]  # the timed call; returns the output tensor
    reference: Any  # the expected output, float64, same shape as fn()'s
    # Entered around warm-up, timing and the error check (a TF32 switch, say).
    context: Callable[[], Any] = field(default=nullcontext)


def uniform(torch, shape, device, dtype=None):
    """Seeded-elsewhere random values uniform in [-1, 1], as the harness's inputs (never zeros)."""
    x = torch.rand(*shape, device=device, dtype=torch.float32) * 2 - 1
    return x if dtype is None else x.to(dtype)
