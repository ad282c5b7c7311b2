import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { apiCall } from './lib/api';
import { useKey } from './lib/auth';
import { woeBins, woeChart } from './lib/charts';
import { ChartView } from './charts';
import { ErrorNotice, Loading, TableWrap } from './components';

interface IvResultRow {
  featureName: string;
  value: number;
  details: unknown;
}

/**
 * A score experiment's WOE per bin of one feature (the strongest by default, any other from the
 * list), drawn from the per-feature `iv` results the experiment stored, with the bins as a table.
 */
export function ScoreBins({ experimentId }: { experimentId: string }) {
  const key = useKey();
  const rows = useQuery({
    queryKey: ['experiment-results', key, experimentId, 'iv'],
    queryFn: () => apiCall<IvResultRow[]>(key, `/experiments/${encodeURIComponent(experimentId)}/results?scorer=iv`),
    enabled: key !== '',
    staleTime: 60_000,
  });
  const [chosen, setChosen] = useState<string>('');
  if (rows.isPending) return <Loading what="the bins" />;
  if (rows.error) return <ErrorNotice title="Could not load the bins" error={rows.error} />;
  // strongest first, as the ranking lists them
  const byIv = [...rows.data].sort((a, b) => b.value - a.value || a.featureName.localeCompare(b.featureName));
  if (!byIv.length) return null;
  const feature = byIv.some((r) => r.featureName === chosen) ? chosen : byIv[0]!.featureName;
  const bins = woeBins(byIv.find((r) => r.featureName === feature)!.details);
  const chart = woeChart(feature, bins);
  return (
    <section className="score-bins" aria-label="WOE per bin">
      <div className="chart-option">
        <label htmlFor="score-bins-feature">Feature</label>{' '}
        <select id="score-bins-feature" value={feature} onChange={(ev) => setChosen(ev.target.value)}>
          {byIv.map((r) => (
            <option key={r.featureName} value={r.featureName}>
              {r.featureName} (IV {r.value.toFixed(4)})
            </option>
          ))}
        </select>
      </div>
      {chart ? <ChartView chart={chart} /> : <p className="muted">no bins stored for {feature}</p>}
      {bins.length ? (
        <TableWrap label={`bins of ${feature}`}>
          <table className="list" aria-label={`bins of ${feature}`}>
            <thead>
              <tr>
                <th scope="col">Bin</th>
                <th scope="col">Rows</th>
                <th scope="col">Events</th>
                <th scope="col">Event rate</th>
                <th scope="col">WOE</th>
                <th scope="col">IV term</th>
              </tr>
            </thead>
            <tbody>
              {bins.map((b, i) => (
                <tr key={`${b.label}-${i}`}>
                  <td className="wrap">{b.label}</td>
                  <td>{b.count}</td>
                  <td>{b.events}</td>
                  <td>{b.count > 0 ? `${((100 * b.events) / b.count).toFixed(2)}%` : '—'}</td>
                  <td>{b.woe.toFixed(4)}</td>
                  <td>{b.iv.toFixed(4)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}
