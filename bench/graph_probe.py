"""Can this GPU capture a bf16 linear layer with bias (cuBLASLt's fused bias) in a CUDA graph?

Run in separate processes with and without ``DISABLE_ADDMM_CUDA_LT=1`` (read once per process
by PyTorch): prints ``capture ok`` or the error. Used to pick the judge worker's setting.
"""

import os

import torch

x = torch.randn(768, 3584, dtype=torch.bfloat16, device="cuda")
w = torch.randn(3584, 3584, dtype=torch.bfloat16, device="cuda")
b = torch.randn(3584, dtype=torch.bfloat16, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(2):
        torch.nn.functional.linear(x, w, b)
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        y = torch.nn.functional.linear(x, w, b)
    g.replay()
    torch.cuda.synchronize()
    ok = torch.allclose(y.float(), torch.nn.functional.linear(x, w, b).float(), atol=1, rtol=0.05)
    print("DISABLE_ADDMM_CUDA_LT=%s: capture ok, same result %s" % (os.environ.get("DISABLE_ADDMM_CUDA_LT"), ok))
except Exception as exc:  # noqa: BLE001
    print("DISABLE_ADDMM_CUDA_LT=%s: capture failed: %s" % (os.environ.get("DISABLE_ADDMM_CUDA_LT"), str(exc).splitlines()[0]))
