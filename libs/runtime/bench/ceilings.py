"""Measured ceilings of the GPU the bench runs on (for the roofline fractions in bench/README.md):
device-memory bandwidth (a 1 GiB device-to-device copy: bytes read + written), FP32 and TF32 matrix
rates (8192^3 through torch -> cuBLAS), and the rate of ctr26's first layer at its own shapes
(K = 429 as ours runs it, K = 432 padded). Median of 20 timed runs after warm-up, CUDA events.
    python3 ceilings.py [OUT_JSON]"""
import json, sys
import torch

dev = 'cuda'


def med_ms(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


res = {'gpu': torch.cuda.get_device_name(0), 'torch': torch.__version__}
n = 1 << 28
x = torch.randn(n, device=dev)
y = torch.empty_like(x)
ms = med_ms(lambda: y.copy_(x))
res['copy_gbps'] = round(2 * 4 * n / ms / 1e6, 1)
del x, y
for name, tf32 in (('fp32', False), ('tf32', True)):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(8192, 8192, device=dev)
    b = torch.randn(8192, 8192, device=dev)
    ms = med_ms(lambda: a @ b)
    res[f'{name}_gemm_8192_tflops'] = round(2 * 8192 ** 3 / ms / 1e9, 1)
    for rows in (8192, 65536):
        for k in (429, 432):
            h = torch.randn(rows, 432, device=dev)[:, :k]  # rows with leading dim 432, as H0
            w = torch.randn(k, 512, device=dev)
            ms = med_ms(lambda: h @ w)
            res[f'{name}_layer0_{rows}x{k}x512_ms'] = round(ms, 4)
            res[f'{name}_layer0_{rows}x{k}x512_tflops'] = round(2 * rows * k * 512 / ms / 1e9, 1)
print(json.dumps(res))
if len(sys.argv) > 1:
    json.dump(res, open(sys.argv[1], 'w'), indent=1)
