import path from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import { apiFrom } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

interface ModelEntry {
  id: string;
  name: string;
  version: number;
  businessLine: string;
  checkpointPath: string | null;
}

export const modelExportFlags = z
  .object({
    id: z.uuid({ message: 'must be a model id (UUID)' }),
    format: z.enum(['onnx', 'safetensors'], { message: 'must be onnx or safetensors' }),
    out: z.string().min(1).optional(),
  })
  .strict();

export const registerModels: RegisterCommand = (program) => {
  const models = program.command('models').description('model versions: export their trained checkpoints');

  models
    .command('export')
    .description(
      'download a model version as safetensors (the checkpoint weights) or ONNX (inputs: numeric [batch, N] raw values, one int64 [batch, L] per slot padded with -1; outputs: probability, logit)',
    )
    .argument('<id>', 'model version id')
    .requiredOption('--format <format>', 'onnx or safetensors')
    .option('-o, --out <file>', 'where to write it (default: ./<name>-v<version>.<onnx|safetensors>)')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('models export', modelExportFlags, { ...raw, id }, ['id']);
      const api = apiFrom(cmd);
      const m = await api.get<ModelEntry>(`/models/${o.id}`);
      const safeName = m.name.replace(/[^A-Za-z0-9._-]/g, '_');
      const out = path.resolve(o.out ?? `${safeName}-v${m.version}.${o.format}`);
      // written to a temporary name beside `out`, renamed when complete
      const bytes = await api.download(`/models/${o.id}/export?format=${o.format}`, out);
      process.stdout.write(`${m.name} v${m.version} (${o.format}): ${bytes} bytes written to ${out}\n`);
    });
};
