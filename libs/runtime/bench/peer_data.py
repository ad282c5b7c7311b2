"""Writes the PyTorch peer's own ctr26 data set (shared/bench/torch_ctr_baseline.py: torch.manual_seed(0),
then make_data(B * NB) with the same calls in the same order, so the same values) as raw little-endian
arrays that `abacus bench runtime --data DIR` reads. Both sides then train and test on identical rows.
    B=8192 NB=40 python3 peer_data.py OUT_DIR
Files: meta.json, lens.u8 [n x 26], ids.i32 [n x 26 x 4], dense.f32 [n x 13], y.f32 [n].
meta.json also holds the test split's AUC of the planted logit (the best any model can do there)."""
import json, os, sys
import torch

torch.manual_seed(0)
B = int(os.environ.get('B', 8192))
NB = int(os.environ.get('NB', 40))
S, D, V, MAXLEN = 26, 13, 100_000, 4
N = B * NB
lens = torch.randint(1, MAXLEN + 1, (N, S))
ids = torch.randint(0, V, (N, S, MAXLEN))
dense = torch.randn(N, D)
logit = 1.5 * dense[:, 0] + (ids[:, 0, 0] % 2).float() - 0.5 + 2.0 * (ids[:, 1, 0] < V // 10).float() - 1.0
y = (torch.rand(N) < torch.sigmoid(logit)).float()


def auc(scores, yy):
    order = torch.argsort(scores, stable=True)
    ranks = torch.empty(len(scores), dtype=torch.float64)
    # average ranks over ties (the planted logit takes few distinct values per dense[0])
    s_sorted = scores[order]
    r = torch.arange(1, len(scores) + 1, dtype=torch.float64)
    uniq, inv, counts = torch.unique_consecutive(s_sorted, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).to(torch.float64)
    avg = ends - (counts.to(torch.float64) - 1) / 2
    ranks[order] = avg[inv]
    pos = yy.sum().double()
    neg = len(yy) - pos
    return float((ranks[yy == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
cut = (NB * 4 // 5) * B
lens.to(torch.uint8).numpy().tofile(os.path.join(out, 'lens.u8'))
ids.to(torch.int32).numpy().tofile(os.path.join(out, 'ids.i32'))
dense.numpy().astype('<f4').tofile(os.path.join(out, 'dense.f32'))
y.numpy().astype('<f4').tofile(os.path.join(out, 'y.f32'))
meta = dict(rows=N, batch=B, batches=NB, slots=S, numeric=D, vocab=V, max_len=MAXLEN, train_rows=cut,
            test_planted_logit_auc=round(auc(logit[cut:], y[cut:]), 5), torch=torch.__version__)
json.dump(meta, open(os.path.join(out, 'meta.json'), 'w'))
print(json.dumps(meta))
