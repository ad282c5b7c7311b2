import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { configSchema } from '@abacus/configs';
import { createScheduleSchema } from '@abacus/reports';
import { servingPolicySchema } from '@abacus/serving';
import { addSpecSchema, discoverSpecSchema, divideSpecSchema, multiplySpecSchema, scoreSpecSchema, subtractSpecSchema } from '@abacus/workflows';
import { buildProgram } from '../../apps/cli/src/main';
import { ROOT, cliMismatch, configMismatch, deadLinks, docFiles, schemaFieldNames, undocumentedFields } from './docs-check';

/** The leaf commands of the CLI, as `--help` lists them (e.g. `keys create`). */
function cliCommands(): string[] {
  const out: string[] = [];
  const walk = (c: Command, prefix: string[]) => {
    for (const s of c.commands) {
      const p = [...prefix, s.name()];
      if (s.commands.length) walk(s, p);
      else out.push(p.join(' '));
    }
  };
  walk(buildProgram(), []);
  return out;
}

const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');

/** Each workflow guide and the schema of what it documents (its spec, a serving policy, a report schedule). */
const GUIDES: [string, unknown][] = [
  ['score', scoreSpecSchema],
  ['add', addSpecSchema],
  ['subtract', subtractSpecSchema],
  ['multiply', multiplySpecSchema],
  ['divide', divideSpecSchema],
  ['discover', discoverSpecSchema],
  ['serving', servingPolicySchema],
  ['reports', createScheduleSchema],
];

describe('the documentation is kept true', () => {
  it('every relative link and anchor of README.md, bench/README.md and docs/ resolves', () => {
    const files = docFiles();
    expect(files).toContain('docs/README.md');
    expect(files.length).toBeGreaterThan(20);
    expect(deadLinks(files)).toEqual([]);
  });

  it('the README stays short and reaches every page of docs/ in one click (through the docs map)', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    const map = read('docs/README.md');
    for (const f of docFiles().filter((x) => x.startsWith('docs/') && x !== 'docs/README.md')) {
      const rel = path.relative('docs', f);
      expect(map.includes(`(${rel})`) || map.includes(`(./${rel})`), `${f} is not in the docs map`).toBe(true);
    }
    expect(readme).toMatch(/\(docs\/README\.md\)/);
  });

  it('the configuration reference lists exactly the config schema’s variables', () => {
    expect(configMismatch(Object.keys(configSchema.shape), read('docs/operations/configuration.md'))).toEqual([]);
  });

  it('each workflow guide names every field of its spec (the model fields on the experiments page)', () => {
    const models = read('docs/guide/experiments.md');
    for (const [page, schema] of GUIDES) {
      const fields = schemaFieldNames(schema);
      expect(fields.length, page).toBeGreaterThan(5);
      expect(undocumentedFields(fields, read(`docs/guide/${page}.md`) + models), `docs/guide/${page}.md`).toEqual([]);
    }
  });

  it('the CLI reference lists exactly the commands `abacus --help` has', () => {
    const commands = cliCommands();
    expect(commands.length).toBeGreaterThan(30);
    expect(cliMismatch(commands, read('docs/reference/cli.md'))).toEqual([]);
  });
});

describe('the docs check fails when the docs break', () => {
  it('on a dead link, a dead anchor and a link out of the repository', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-docs-'));
    try {
      fs.mkdirSync(path.join(dir, 'docs/guide'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'docs/guide/a.md'), '# A page\n\n## The `add` rule — 95 %\n\ntext\n');
      fs.writeFileSync(
        path.join(dir, 'docs/README.md'),
        [
          '# Docs',
          '[ok](guide/a.md) [ok anchor](guide/a.md#the-add-rule--95-) [web](https://example.com/x.md)',
          '[gone](guide/missing.md) [bad anchor](guide/a.md#nope) [out](../../etc/passwd)',
          '```',
          '[in code](nowhere.md)',
          '```',
        ].join('\n'),
      );
      const problems = deadLinks(['docs/README.md'], dir);
      expect(problems).toEqual([
        'docs/README.md: link "guide/missing.md": docs/guide/missing.md does not exist',
        'docs/README.md: link "guide/a.md#nope": no heading #nope in docs/guide/a.md',
        'docs/README.md: link "../../etc/passwd" leaves the repository',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on a config variable missing from the reference, or documented but gone from the schema', () => {
    const ref = read('docs/operations/configuration.md');
    const keys = Object.keys(configSchema.shape);
    expect(configMismatch([...keys, 'ABACUS_NEW_KNOB'], ref)).toEqual([
      'ABACUS_NEW_KNOB is in the config schema but not in the configuration reference',
    ]);
    expect(
      configMismatch(
        keys.filter((k) => k !== 'ABACUS_API_PORT'),
        ref,
      ),
    ).toEqual(['ABACUS_API_PORT is in the configuration reference but not in the config schema']);
  });

  it('on a spec field its guide does not name', () => {
    expect(schemaFieldNames(addSpecSchema)).toEqual(
      expect.arrayContaining(['base', 'candidates', 'minGain', 'embeddingDim', 'freeze']),
    );
    const page = read('docs/guide/add.md').replaceAll('`minGain`', 'the minimum gain');
    expect(undocumentedFields(schemaFieldNames(addSpecSchema), page + read('docs/guide/experiments.md'))).toEqual(['minGain']);
  });

  it('on a CLI command missing from the reference, or documented but gone', () => {
    const ref = read('docs/reference/cli.md');
    const commands = cliCommands();
    expect(cliMismatch([...commands, 'widgets frob'], ref)).toEqual([
      'abacus widgets frob is a command of the CLI but not in the CLI reference',
    ]);
    expect(
      cliMismatch(
        commands.filter((c) => c !== 'keys whoami'),
        ref,
      ),
    ).toEqual(['abacus keys whoami is in the CLI reference but not a command of the CLI']);
  });
});
