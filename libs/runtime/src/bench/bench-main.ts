/**
 * Standalone runner (bundled by libs/runtime/bench/build-runner.sh into one file that needs only
 * node and the addon beside it):
 *   node run-bench.js --backend cpu --batch 8192 --steps 64 --threads 2 [--vocab 100000] [--addon path] [--stream]
 */
import path from 'node:path';

import { setAddonPath, setCudaAddonPath } from '../binding';
import { runChunkCalls } from './chunk-calls';
import { runCudaParity } from './cuda-parity';
import { runInPlaceParity } from './in-place-parity';
import { runConfirmShape, runHostFits, runLaunchProxy, runPruneShape } from './prune-shape';
import { runCudaStress } from './cuda-stress';
import { runFitRepeat } from './fit-repeat';
import { runEdgeCases } from './edge-cases';
import { runMultiGpu } from './multi-gpu';
import { runRuntimeBench } from './runtime-bench';

async function main() {
  const args = process.argv.slice(2);
  const get = (k: string, d: string) => {
    const i = args.indexOf(`--${k}`);
    return i >= 0 && args[i + 1] ? args[i + 1]! : d;
  };
  setAddonPath(path.resolve(get('addon', path.join(__dirname, 'abacus_runtime.node'))));
  setCudaAddonPath(path.resolve(get('cuda-addon', path.join(__dirname, 'abacus_runtime_cuda.node'))));
  if (args.includes('--edge-cases')) {
    const backend = get('backend', 'cpu') as 'cpu' | 'cuda';
    const r = await runEdgeCases(backend, (s) => console.error(s));
    console.log(JSON.stringify({ backend, edgeCases: r }));
    if (r.some((c) => !c.ok)) process.exitCode = 2;
    return;
  }
  if (args.includes('--stress')) {
    const backend = get('backend', 'cuda') as 'cpu' | 'cuda';
    const r = await runCudaStress(
      { cases: Number(get('cases', '40')), seed: Number(get('seed', '1')), lanes: Number(get('lanes', '3')), backend, maxRows: Number(get('max-rows', '30000')) },
      (s) => console.error(s),
    );
    console.log(JSON.stringify({ backend, stress: r }));
    if (r.some((c) => !c.ok)) process.exitCode = 2;
    return;
  }
  if (args.includes('--confirm-shape')) {
    // the confirm's fits as the platform trains them, alone and three at once, each ingredient on or off
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(path.join(tmpdir(), 'abacus-confirm-shape-'));
    try {
      const r = await runConfirmShape({
        backend: get('backend', 'cuda') as 'cpu' | 'cuda',
        rows: Number(get('rows', '600000')),
        numeric: Number(get('numeric', '6')),
        slots: Number(get('slots', '9')),
        dir,
      });
      console.log(JSON.stringify({ confirmShape: r, command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  if (args.includes('--host-fits')) {
    // CPU fits of one batch: one after another on every thread, or several at once on a share each
    const n = (k: string, d: string) => Number(get(k, d));
    const list = (k: string, d: string) => get(k, d).split(',').map(Number);
    const { availableParallelism } = await import('node:os');
    const r = await runHostFits({
      rows: n('rows', '300000'), numeric: n('numeric', '6'), slots: n('slots', '9'),
      threads: n('threads', String(availableParallelism())), fits: list('fits', '3,6'), atOnce: list('at-once', '1,2,3'),
      epochs: n('epochs', '2'), repeats: n('repeats', '2'),
    });
    console.log(JSON.stringify({ hostFits: r, command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    return;
  }
  if (args.includes('--prune-shape')) {
    // a subtract's prune + confirm work at the default model's shape, each phase timed
    const n = (k: string, d: string) => Number(get(k, d));
    const r = await runPruneShape({
      backend: (get('backend', 'cuda') as 'cpu' | 'cuda'),
      rows: n('rows', '600000'), numeric: n('numeric', '14'), slots: n('slots', '26'), lanes: n('lanes', '3'),
      checks: n('checks', '13'), seeds: n('seeds', '3'), estimates: n('estimates', '26'), folds: n('folds', '10'),
      repeats: n('repeats', '3'), warmSteps: n('warm-steps', '300'), batch: n('batch', '1024'), epochs: n('epochs', '3'),
      trace: args.includes('--trace'),
      ...(get('slot-max-len', '') ? { slotMaxLen: get('slot-max-len', '').split(',').map(Number) } : {}),
      vocab: n('vocab', '2000'),
      ...(get('slot-vocab', '') ? { slotVocab: get('slot-vocab', '').split(',').map(Number) } : {}),
    });
    console.log(JSON.stringify({ pruneShape: r, command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    return;
  }
  if (args.includes('--hbm-budget')) {
    // ctr26 on Zipf ids with the tables in host memory under budgets (fractions of the tables) against on the device
    const { runOffloadBench } = await import('./offload-parity');
    const n = (k: string, d: string) => Number(get(k, d));
    const r = await runOffloadBench({
      vocab: n('vocab', '2000000'), zipf: n('zipf', '1.05'), batch: n('batch', '8192'), steps: n('steps', '200'), batches: n('batches', '40'),
      budgets: get('hbm-budget', '0.25').split(',').filter(Boolean).map(Number),
      loadFactors: get('load-factors', '').split(',').filter(Boolean).map(Number),
      streamed: args.includes('--streamed'),
    });
    console.log(JSON.stringify({ offloadBench: r, command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    return;
  }
  if (args.includes('--offload-beyond')) {
    // one pass of ctr26 over tables larger than the card (host memory, a device cache) or a hashed baseline on the device
    const { runOffloadBeyond } = await import('./offload-parity');
    const n = (k: string, d: string) => Number(get(k, d));
    const side = get('offload-beyond', 'full');
    if (side !== 'full' && side !== 'hashed') throw new Error(`--offload-beyond: 'full' or 'hashed', not '${side}'`);
    const r = await runOffloadBeyond({
      vocab: n('vocab', '30000000'), hashVocab: n('hash-vocab', '8000000'), zipf: n('zipf', '1.05'), batch: n('batch', '8192'),
      trainBatches: n('train-batches', '400'), testBatches: n('test-batches', '32'), side,
    });
    console.log(JSON.stringify({ offloadBeyond: r, command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    return;
  }
  if (args.includes('--determinism')) {
    // two identical cuda fits in one process: where their losses first differ
    const { runDeterminism } = await import('./offload-parity');
    const n = (k: string, d: string) => Number(get(k, d));
    console.log(JSON.stringify({ determinism: await runDeterminism({ vocab: n('vocab', '20000'), steps: n('steps', '351'), pairs: n('pairs', '3') }), command: `node run-bench.js ${args.join(' ')}` }));
    return;
  }
  if (args.includes('--offload-parity')) {
    // embedding tables in host memory with a device cache against the tables on the device (cuda)
    const { runOffloadParity } = await import('./offload-parity');
    console.log(JSON.stringify({ offloadParity: await runOffloadParity(), command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    return;
  }
  if (args.includes('--launch-proxy')) {
    // K fine-tunes at once today against one K-times-wide model: the floor of one launch for K sets
    const n = (k: string, d: string) => Number(get(k, d));
    const r = await runLaunchProxy({
      backend: (get('backend', 'cuda') as 'cpu' | 'cuda'),
      rows: n('rows', '300000'), numeric: n('numeric', '27'), slots: n('slots', '13'),
      ks: get('ks', '1,2,3,6').split(',').map(Number), warmSteps: n('warm-steps', '300'), batch: n('batch', '1024'),
      repeats: n('repeats', '5'),
      ...(get('slot-max-len', '') ? { slotMaxLen: get('slot-max-len', '').split(',').map(Number) } : {}),
      ...(get('slot-vocab', '') ? { slotVocab: get('slot-vocab', '').split(',').map(Number) } : {}),
    });
    console.log(JSON.stringify({ launchProxy: r, command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    return;
  }
  if (args.includes('--chunk-calls')) {
    // an epoch as one train call against one call per chunk (an in-order first epoch), per call's setup
    const n = (k: string, d: string) => Number(get(k, d));
    const r = await runChunkCalls(
      {
        backend: get('backend', 'cuda') as 'cpu' | 'cuda',
        rows: n('rows', '576000'), numeric: n('numeric', '14'), slots: n('slots', '26'),
        shardRows: n('shard-rows', '111000'), chunkRows: n('chunk-rows', '65536'), batch: n('batch', '1024'),
      },
      (s) => console.error(s),
    );
    console.log(JSON.stringify({ chunkCalls: r, command: `node run-bench.js ${args.join(' ')}`, date: new Date().toISOString() }));
    return;
  }
  if (args.includes('--fit-repeat')) {
    // the in-place parity's fine-tune repeated each way: run-to-run differences against way-to-way ones
    const backend = get('backend', 'cuda') as 'cpu' | 'cuda';
    console.log(JSON.stringify({ backend, fitRepeat: await runFitRepeat(backend), env: { CUDA_LAUNCH_BLOCKING: process.env.CUDA_LAUNCH_BLOCKING ?? null } }));
    return;
  }
  if (args.includes('--in-place-parity')) {
    // fine-tunes started in place vs from the checkpoint with switched-off copies, on each backend here
    const backends = args.includes('--cuda-only') ? ['cuda' as const] : (['cpu', 'cuda'] as const);
    const r: Record<string, unknown> = {};
    for (const b of backends) r[b] = await runInPlaceParity(b);
    console.log(JSON.stringify({ inPlaceParity: r }));
    return;
  }
  if (args.includes('--parity')) {
    const r = await runCudaParity((s) => console.error(s));
    console.log(JSON.stringify({ parity: r }));
    if (r.some((c) => !c.ok)) process.exitCode = 2;
    return;
  }
  if (args.includes('--multi-gpu')) {
    const r = await runMultiGpu(
      { batch: Number(get('batch', '8192')), steps: Number(get('steps', '300')), vocab: Number(get('vocab', '100000')), batches: Number(get('batches', '40')), command: `node run-bench.js ${args.join(' ')}` },
      (s) => console.error(s),
    );
    console.log(JSON.stringify(r));
    return;
  }
  const res = await runRuntimeBench(
    {
      backend: get('backend', 'cpu') as 'cpu',
      model: 'ctr26',
      batch: Number(get('batch', '8192')),
      steps: Number(get('steps', '64')),
      threads: Number(get('threads', '2')),
      vocab: Number(get('vocab', '100000')),
      batches: Number(get('batches', '40')),
      ablation: args.includes('--ablation'),
      shuffle: get('shuffle', 'false') === 'true',
      seed: Number(get('seed', '0')),
      dataSeed: Number(get('data-seed', '0')),
      ...(get('data', '') ? { dataDir: get('data', '') } : {}),
      trace: args.includes('--trace'),
      stream: args.includes('--stream'),
      ...(get('auc-seeds', '') ? { aucSeeds: get('auc-seeds', '').split(',').map(Number) } : {}),
      command: `node run-bench.js ${args.join(' ')}`,
    },
    (s) => console.error(s),
  );
  console.log(JSON.stringify(res));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
