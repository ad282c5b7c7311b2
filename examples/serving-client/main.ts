import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { ServingClient } from './client';

/**
 * Demo: register a served model (or follow one with --serving-id), print every swap, and report
 * this host's CPU load once a second. Run after building: see README.md next to this file.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      api: { type: 'string', default: 'http://127.0.0.1:3000' },
      'key-file': { type: 'string' },
      'secret-file': { type: 'string' },
      model: { type: 'string' },
      line: { type: 'string' },
      tiers: { type: 'string', default: '0,1,2' },
      policy: { type: 'string' },
      'serving-id': { type: 'string' },
      port: { type: 'string', default: '0' },
      seconds: { type: 'string', default: '60' },
    },
  });
  if (!values['key-file'] || !values['secret-file']) throw new Error('--key-file and --secret-file are required');
  const client = new ServingClient({
    apiUrl: values.api,
    apiKey: fs.readFileSync(values['key-file'], 'utf8').trim(),
    secret: fs.readFileSync(values['secret-file'], 'utf8').trim(),
    listenPort: Number(values.port),
  });
  client.onSwitch((next, prev) => {
    console.log(
      `${new Date().toISOString()} serving tier ${next.tier} (model ${next.modelId} v${next.version}, ${next.features.length} features)` +
        `${prev ? `, was tier ${prev.tier}` : ''}${next.pinned ? `, pinned: ${next.pinned.reason}` : ''}; artifact ${next.artifactUrls.safetensors}`,
    );
  });
  if (values['serving-id']) await client.attach(values['serving-id']);
  else {
    if (!values.model || !values.line) throw new Error('--model and --line are required to register (or pass --serving-id)');
    const id = await client.register({
      model: values.model,
      businessLine: values.line,
      tiers: values.tiers.split(',').map(Number),
      ...(values.policy ? { policy: JSON.parse(fs.readFileSync(values.policy, 'utf8')) as unknown } : {}),
    });
    console.log(`registered served model ${id}`);
  }
  const cores = os.cpus().length;
  const until = Date.now() + Number(values.seconds) * 1000;
  while (Date.now() < until) {
    const cpu = Math.min(1, os.loadavg()[0] / cores);
    const r = await client.reportSignals({ cpu });
    console.log(`cpu ${cpu.toFixed(2)}: ${r.decision.action}, tier ${r.tier} (${r.decision.reason})`);
    await new Promise((res) => setTimeout(res, 1000));
  }
  await client.close();
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});
