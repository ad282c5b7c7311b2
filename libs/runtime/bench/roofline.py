"""Where a ctr26 training step and a predict spend their time, and how close they come to the GPU's
measured ceilings. Inputs from one device call (bench/results/runtime-ctr26_device-cuda.sh):
  bench JSON (abacus bench runtime --trace: CUPTI per-kernel times inside the graph replay),
  ncu CSV (DRAM bytes per kernel; ncu serialises kernels and flushes caches, so its bytes are
  an upper bound of what the graph moves and its times are not used for the step), ceilings.json.
    python3 roofline.py BENCH.json NCU.csv CEILINGS.json [OUT.json]"""
import csv, io, json, sys

bench, ncu_csv, ceil = json.load(open(sys.argv[1])), sys.argv[2], json.load(open(sys.argv[3]))
B = bench['batch']
lines = [l for l in open(ncu_csv) if l.startswith('"')]
rows = list(csv.reader(io.StringIO(''.join(lines))))
hdr, rows = rows[0], rows[1:]
ix = {h: i for i, h in enumerate(hdr)}
kern = {}
for r in rows:
    d = kern.setdefault(int(r[ix['ID']]), {'name': r[ix['Kernel Name']]})
    d[r[ix['Metric Name']]] = float(r[ix['Metric Value']].replace(',', ''))
ks = [kern[i] for i in sorted(kern)]
# split into training steps (each starts with step_begin); what follows the last full step is the predict
steps, cur = [], None
for k in ks:
    if 'step_begin' in k['name']:
        cur = []
        steps.append(cur)
    if cur is not None:
        cur.append(k)
tail = []
if steps:
    n0 = len(steps[0])
    last = steps[-1]
    if len(last) > n0:
        tail = last[n0:]
        del last[n0:]


def short(n):
    n = n.split('(')[0]
    for p in ('void ', 'abacus::k::', 'abacus::', 'cub::CUB_300001_SM_900::detail::', 'cublasLt::'):
        n = n.replace(p, '')
    return n[:70]


def by_bytes(klist):
    return sum(k.get('dram__bytes_read.sum', 0) + k.get('dram__bytes_write.sum', 0) for k in klist)


step_bytes = sorted(by_bytes(s) for s in steps)[len(steps) // 2] if steps else 0
step_s = B / bench['train_samples_per_s']
flops_step = bench['mlp_flops']['per_train_sample'] * B
bw, tf32 = ceil['copy_gbps'] * 1e9, ceil['tf32_gemm_8192_tflops'] * 1e12
cupti = bench.get('cupti', {}).get('train_steps', {})
out = {
    'gpu': ceil.get('gpu'), 'batch': B, 'step_ms_wall': round(step_s * 1e3, 4),
    'step_kernel_ms_cupti': round(cupti.get('kernel_time_ns', 0) / max(1, cupti.get('regions', 1)) / 1e6, 4),
    'step_dram_bytes_ncu': int(step_bytes), 'mlp_flops_per_step': flops_step,
    'measured_ceilings': {'copy_gbps': ceil['copy_gbps'], 'tf32_tflops': ceil['tf32_gemm_8192_tflops'], 'fp32_tflops': ceil['fp32_gemm_8192_tflops']},
    'fraction_of_bandwidth': round(step_bytes / step_s / bw, 3),
    'fraction_of_tf32': round(flops_step / step_s / tf32, 3),
    'math': bench.get('gpu', {}).get('math', 'tf32'),
    'kernels_per_step_ncu': len(steps[0]) if steps else 0,
}
per = []
for k in steps[0] if steps else []:
    b = k.get('dram__bytes_read.sum', 0) + k.get('dram__bytes_write.sum', 0)
    t = k.get('gpu__time_duration.sum', 0) * 1e-9
    per.append({'kernel': short(k['name']), 'ncu_us': round(t * 1e6, 1), 'dram_mb': round(b / 1e6, 2),
                'dram_gbps_ncu': round(b / t / 1e9, 0) if t else None, 'sm_pct': k.get('sm__throughput.avg.pct_of_peak_sustained_elapsed')})
out['step_kernels_ncu'] = per
if tail:
    eb = by_bytes(tail)
    rows_eval = bench.get('eval_rows', 0)
    t_eval = rows_eval / bench['eval_samples_per_s'] if bench.get('eval_samples_per_s') else 0
    out['predict'] = {'rows': rows_eval, 'dram_bytes_ncu': int(eb), 'call_ms_wall': round(t_eval * 1e3, 4),
                      'fraction_of_bandwidth': round(eb / t_eval / bw, 3) if t_eval else None,
                      'fraction_of_tf32': round(bench['mlp_flops']['per_eval_sample'] * rows_eval / t_eval / tf32, 3) if t_eval else None,
                      'kernels': [{'kernel': short(k['name']), 'ncu_us': round(k.get('gpu__time_duration.sum', 0) / 1e3, 1),
                                   'dram_mb': round((k.get('dram__bytes_read.sum', 0) + k.get('dram__bytes_write.sum', 0)) / 1e6, 2)} for k in tail]}
print(f"step (batch {B}): wall {out['step_ms_wall']} ms, CUPTI kernel time {out['step_kernel_ms_cupti']} ms, DRAM {step_bytes / 1e6:.1f} MB (ncu), "
      f"MLP {flops_step / 1e9:.2f} GFLOP -> {out['fraction_of_bandwidth'] * 100:.1f}% of {ceil['copy_gbps']:.0f} GB/s, "
      f"{out['fraction_of_tf32'] * 100:.1f}% of TF32 {ceil['tf32_gemm_8192_tflops']} TFLOP/s")
for p in per:
    print(f"  {p['kernel']:<70} {p['ncu_us']:>8} us {p['dram_mb']:>8} MB {p['dram_gbps_ncu']} GB/s")
if 'predict' in out:
    pr = out['predict']
    print(f"predict ({pr['rows']} rows): wall {pr['call_ms_wall']} ms, DRAM {pr['dram_bytes_ncu'] / 1e6:.1f} MB -> "
          f"{pr['fraction_of_bandwidth'] * 100:.1f}% of bandwidth, {pr['fraction_of_tf32'] * 100:.1f}% of TF32")
if len(sys.argv) > 4:
    json.dump(out, open(sys.argv[4], 'w'), indent=1)
