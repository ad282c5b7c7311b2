import fs from 'node:fs';
import path from 'node:path';

/**
 * A small flat sample table whose right answer is known: `strong` drives the click, `weak` a little,
 * `noise` not at all; `color` is categorical with one clicky category. Deterministic (LCG).
 */
export function writeSmallCsv(file: string, rows = 2000): void {
  let s = 12345;
  const rand = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
  const lines = ['ts,strong,weak,noise,color,click'];
  for (let i = 0; i < rows; i++) {
    const strong = rand() * 2 - 1;
    const weak = rand() * 2 - 1;
    const noise = rand();
    const color = ['red', 'green', 'blue'][Math.floor(rand() * 3)];
    const logit = -1 + 3 * strong + 0.5 * weak + (color === 'red' ? 0.8 : 0);
    const click = rand() < 1 / (1 + Math.exp(-logit)) ? 1 : 0;
    lines.push(`${1000 + i},${strong.toFixed(4)},${weak.toFixed(4)},${noise.toFixed(4)},${color},${click}`);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

/** A CSV with a ragged row (one field too many) in the middle. */
export function writeMalformedCsv(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, 'ts,strong,click\n1,0.5,1\n2,0.1,0\n3,0.7,1,EXTRA,FIELDS\n4,0.2,0\n');
}

export function listDir(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true }).map(String).sort();
}
