import fs from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt from 'markdown-it';

/**
 * The checks that keep the documentation true: relative links and anchors resolve, the configuration
 * reference lists exactly the variables of the config schema, and the CLI reference lists exactly the
 * commands the CLI has. Each returns its problems as sentences (none = it holds).
 */

const md = new MarkdownIt({ html: true });

export const ROOT = path.resolve(__dirname, '../..');

/** The Markdown files the documentation is made of: README.md, bench/README.md and docs/**. */
export function docFiles(root = ROOT): string[] {
  const out = ['README.md', 'bench/README.md'].filter((f) => fs.existsSync(path.join(root, f)));
  const walk = (d: string) => {
    for (const e of fs.readdirSync(path.join(root, d), { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) out.push(p);
    }
  };
  if (fs.existsSync(path.join(root, 'docs'))) walk('docs');
  return out.sort();
}

/** The anchors GitHub gives a Markdown file's headings (github-slugger, duplicates numbered). */
export function anchorsOf(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const out = new Set<string>();
  const tokens = md.parse(text, {});
  tokens.forEach((t, i) => {
    if (t.type !== 'heading_open') return;
    const inline = tokens[i + 1];
    const plain = (inline?.children ?? [])
      .filter((c) => c.type === 'text' || c.type === 'code_inline')
      .map((c) => c.content)
      .join('');
    out.add(slugger.slug(plain));
  });
  // explicit anchors: <a id="..."> / <a name="...">
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

/** Every link target of a Markdown file (links and images, outside code). */
export function linksOf(text: string): string[] {
  const out: string[] = [];
  const visit = (tokens: ReturnType<typeof md.parse>) => {
    for (const t of tokens) {
      if (t.type === 'link_open') out.push(String(t.attrGet('href') ?? ''));
      if (t.type === 'image') out.push(String(t.attrGet('src') ?? ''));
      if (t.children) visit(t.children);
    }
  };
  visit(md.parse(text, {}));
  return out;
}

/** Dead relative links and anchors of the given files (paths relative to root). */
export function deadLinks(files: string[], root = ROOT): string[] {
  const problems: string[] = [];
  const anchors = new Map<string, Set<string>>();
  const anchorsFor = (file: string) => {
    let a = anchors.get(file);
    if (!a) {
      a = anchorsOf(fs.readFileSync(path.join(root, file), 'utf8'));
      anchors.set(file, a);
    }
    return a;
  };
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    for (const href of linksOf(text)) {
      if (!href || /^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // http:, https:, mailto:
      const [rawPath, frag] = href.split('#', 2) as [string, string | undefined];
      const target = rawPath ? path.normalize(path.join(path.dirname(file), decodeURIComponent(rawPath))) : file;
      if (target.startsWith('..')) {
        problems.push(`${file}: link "${href}" leaves the repository`);
        continue;
      }
      if (!fs.existsSync(path.join(root, target))) {
        problems.push(`${file}: link "${href}": ${target} does not exist`);
        continue;
      }
      if (frag && target.endsWith('.md') && !anchorsFor(target).has(frag)) {
        problems.push(`${file}: link "${href}": no heading #${frag} in ${target}`);
      }
    }
  }
  return problems;
}

/** The variables in the first column of the configuration reference's tables (`ABACUS_…`, `XDG_CONFIG_HOME`). */
export function documentedVariables(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    // a row may name several: `ABACUS_API_HOST` / `ABACUS_API_PORT`
    const first = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*_[A-Z0-9_]+)`/g)) out.add(m[1]!);
  }
  return out;
}

/** Variables the schema has and the reference lacks, and the other way round. */
export function configMismatch(schemaKeys: string[], referenceText: string): string[] {
  const documented = documentedVariables(referenceText);
  const schema = new Set(schemaKeys);
  return [
    ...[...schema]
      .filter((k) => !documented.has(k))
      .map((k) => `${k} is in the config schema but not in the configuration reference`),
    ...[...documented]
      .filter((k) => !schema.has(k))
      .map((k) => `${k} is in the configuration reference but not in the config schema`),
  ];
}

/** The commands the CLI reference lists: `abacus …` in the first column of its command table. */
export function documentedCommands(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^\|\s*`abacus ([a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)*)`\s*\|/.exec(line);
    if (m) out.add(m[1]!);
  }
  return out;
}

/** Commands the CLI has and the reference lacks, and the other way round. */
export function cliMismatch(commands: string[], referenceText: string): string[] {
  const documented = documentedCommands(referenceText);
  const have = new Set(commands);
  return [
    ...[...have].filter((c) => !documented.has(c)).map((c) => `abacus ${c} is a command of the CLI but not in the CLI reference`),
    ...[...documented].filter((c) => !have.has(c)).map((c) => `abacus ${c} is in the CLI reference but not a command of the CLI`),
  ];
}

interface ZodLike {
  _zod?: { def: Record<string, unknown> & { type: string } };
}

/**
 * The field names a zod schema accepts, nested objects included (through optional, default,
 * nullable, union, array, record and pipe wrappers), without duplicates.
 */
export function schemaFieldNames(schema: unknown): string[] {
  const out = new Set<string>();
  const seen = new Set<unknown>();
  const visit = (s: unknown) => {
    const def = (s as ZodLike)?._zod?.def;
    if (!def || seen.has(s)) return;
    seen.add(s);
    switch (def.type) {
      case 'object':
        for (const [k, v] of Object.entries(def.shape as Record<string, unknown>)) {
          out.add(k);
          visit(v);
        }
        return;
      case 'optional':
      case 'nullable':
      case 'default':
      case 'prefault':
      case 'readonly':
      case 'nonoptional':
      case 'catch':
        return visit(def.innerType);
      case 'array':
        return visit(def.element);
      case 'record':
        return visit(def.valueType);
      case 'union':
        return (def.options as unknown[]).forEach(visit);
      case 'intersection':
        visit(def.left);
        return visit(def.right);
      case 'pipe':
        visit(def.in);
        return visit(def.out);
      case 'lazy':
        return visit((def.getter as () => unknown)());
      default:
        return;
    }
  };
  visit(schema);
  return [...out];
}

/** Fields of a spec schema that its guide page never names in backticks (`field`). */
export function undocumentedFields(fields: string[], pageText: string): string[] {
  return fields.filter((f) => !pageText.includes(`\`${f}\``) && !new RegExp(`\`[^\`\\n]*\\b${f}\\b[^\`\\n]*\``).test(pageText));
}
