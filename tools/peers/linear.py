"""Linear + bias + activation peers: F.linear then the activation, and torch.compile of it."""

from .common import Peer, uniform
from .gemm import tf32


def activation(torch, name):
    f = torch.nn.functional
    if name == "relu":
        return f.relu
    return lambda x: f.gelu(x, approximate="tanh")


def peers(shape, torch, device):
    m, n, k, act = shape["m"], shape["n"], shape["k"], shape["act"]
    x = uniform(torch, (m, k), device)
    w = uniform(torch, (n, k), device)
    bias = uniform(torch, (n,), device)
    g = activation(torch, act)
    ref = g(torch.nn.functional.linear(x.double(), w.double(), bias.double()))

    def eager():
        return g(torch.nn.functional.linear(x, w, bias))

    yield Peer(
        "torch-linear",
        "fp32",
        f"F.linear + {act} (two kernels), FP32, TF32 off",
        eager,
        ref,
        tf32(torch, False),
    )
    try:
        compiled = torch.compile(eager)
        with tf32(torch, False)():
            compiled()  # compiles now, outside any timing; fails here if it cannot
    except Exception as e:  # no Triton, no compiler: say so and go on
        print(f"  torch.compile of linear+{act} skipped: {type(e).__name__}: {e}")
        return
    yield Peer(
        "torch-linear-compiled",
        "fp32",
        f"torch.compile(F.linear + {act}): Inductor's fused epilogue, FP32, TF32 off",
        compiled,
        ref,
        tf32(torch, False),
    )
