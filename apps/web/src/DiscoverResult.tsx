import { Link } from '@tanstack/react-router';
import { TableWrap } from './components';
import { VerdictBadge } from './catalog-components';

interface Interval {
  delta?: number;
  mean?: number;
  ciLow: number;
  ciHigh: number;
}
interface Chosen {
  name: string;
  text: string;
  family: string;
  screenGain: number;
  verdict: string | null;
  leaveOneIn: Interval | null;
  gain: Interval | null;
}

const f5 = (v: number | undefined) => (v === undefined ? '—' : v.toFixed(5));
const interval = (i: Interval | null) => (i ? `${f5(i.delta ?? i.mean)} [${f5(i.ciLow)}, ${f5(i.ciHigh)}]` : '—');

/** discover: the candidates sent to the verified comparison, with the screen's gain, the verdict and ΔAUC. */
export function DiscoverResult({ result }: { result: unknown }) {
  const r = result as { candidates?: number; screenRows?: number; chosen?: Chosen[]; registered?: string[]; skipped?: string | null };
  if (!Array.isArray(r.chosen)) return null;
  const registered = new Set(r.registered ?? []);
  return (
    <section aria-labelledby="discovered">
      <h2 id="discovered">Discovered features</h2>
      <p className="muted">
        {r.candidates ?? 0} candidate expressions screened on {r.screenRows ?? 0} fitted rows against the base model; the best{' '}
        {r.chosen.length} went through add&apos;s verified comparison (decided on the validation split, ΔAUC reported on the test
        split).{r.skipped ? ` ${r.skipped}.` : ''}
      </p>
      {r.chosen.length ? (
        <TableWrap label="discovered features">
          <table>
            <thead>
              <tr>
                <th scope="col">expression</th>
                <th scope="col">family</th>
                <th scope="col">screen gain (log loss)</th>
                <th scope="col">ΔAUC validation</th>
                <th scope="col">verdict</th>
                <th scope="col">ΔAUC test</th>
                <th scope="col">registered</th>
              </tr>
            </thead>
            <tbody>
              {r.chosen.map((c) => (
                <tr key={c.name}>
                  <td>
                    <code>{c.text}</code>
                  </td>
                  <td>{c.family}</td>
                  <td>{f5(c.screenGain)}</td>
                  <td>{interval(c.leaveOneIn)}</td>
                  <td>{c.verdict ? <VerdictBadge verdict={c.verdict} /> : '—'}</td>
                  <td>{interval(c.gain)}</td>
                  <td>{registered.has(c.name) ? <Link to="/features" search={{ q: c.name }}>{c.name}</Link> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}
