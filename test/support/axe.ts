import fs from 'node:fs';
import type { Page } from 'playwright-core';

/** axe-core's browser build, read once (injected through the DevTools protocol, which the page's CSP does not govern). */
let source: string | null = null;
const axeSource = () => (source ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Runs axe-core's WCAG 2.1 A/AA rules (labels, names, contrast, landmarks, keyboard traps, ARIA use)
 * on the page as it is now and returns the violations, each with the selectors of its elements.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate<boolean>("typeof window.axe === 'object'"))) await page.evaluate(axeSource());
  return page.evaluate<AxeViolation[]>(`
    window.axe
      .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] })
      .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) })))
  `);
}
