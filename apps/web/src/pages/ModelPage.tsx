import { useState } from 'react';
import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type ModelVersion, type SampleSet } from '../lib/api';
import { useKey } from '../lib/auth';
import { downloadWithKey } from '../lib/download';
import { formatDateTime } from '../lib/format';
import { formatFractions, formatMetric, versionLabel } from '../lib/catalog';
import { ErrorNotice, KeyValueTable, Loading } from '../components';
import { architectureSummary } from './ModelsPage';
import { tierAlias } from '@abacus/workflows/browser';

/** One model version: features, sample set, architecture, training, metrics, costs, and its checkpoint to download. */
export function ModelPage({ id }: { id: string }) {
  const key = useKey();
  const model = useQuery({
    queryKey: ['model', key, id],
    queryFn: () => apiCall<ModelVersion>(key, `/models/${id}`),
    enabled: key !== '',
  });
  const m = model.data;
  const set = useQuery({
    queryKey: ['sample-set', key, m?.sampleSetId],
    queryFn: () => apiCall<SampleSet>(key, `/sample-sets/${m!.sampleSetId}`),
    enabled: key !== '' && !!m,
    retry: false,
  });
  return (
    <>
      <p>
        <Link to="/models">← Models</Link>
      </p>
      {model.error ? <ErrorNotice title="Could not load the model" error={model.error} /> : null}
      {model.isPending ? <Loading what="the model" /> : null}
      {m ? (
        <>
          <h1>
            {m.name}{' '}
            <span className="muted h-sub">
              {versionLabel(m)} · {m.businessLine}
            </span>
          </h1>
          <dl className="facts">
            <dt>Reference</dt>
            <dd>
              <code>
                {m.name}@v{m.version}
              </code>
              {m.tier !== null ? (
                <>
                  {' '}
                  or{' '}
                  <code>
                    {m.name}@{tierAlias(m.tier)}
                  </code>
                </>
              ) : null}
            </dd>
            <dt>Sample set</dt>
            <dd>
              <Link to="/data/$id" params={{ id: m.sampleSetId }}>
                {set.data ? `${set.data.businessLine}/${set.data.name}` : m.sampleSetId}
              </Link>
            </dd>
            <dt>Architecture</dt>
            <dd>{architectureSummary(m.architecture)}</dd>
            <dt>AUC</dt>
            <dd>{formatMetric(m.metrics?.auc)}</dd>
            <dt>Logloss</dt>
            <dd>{formatMetric(m.metrics?.logloss)}</dd>
            <dt>Cost (of the full model)</dt>
            <dd>{formatFractions(m.costs?.fractions)}</dd>
            <dt>Made by</dt>
            <dd>
              {m.experimentId ? (
                <Link to="/experiments/$id" params={{ id: m.experimentId }}>
                  experiment
                </Link>
              ) : (
                `registered by ${m.owner}`
              )}
            </dd>
            <dt>Registered</dt>
            <dd>{formatDateTime(m.createdAt)}</dd>
          </dl>
          <Export model={m} />
          <section aria-labelledby="model-features">
            <h2 id="model-features">Features ({m.features.length})</h2>
            <ul className="feature-list">
              {m.features.map((f) => (
                <li key={f}>
                  <Link to="/features" search={{ q: f, line: m.businessLine }}>
                    {f}
                  </Link>
                </li>
              ))}
            </ul>
          </section>
          <section aria-labelledby="model-architecture">
            <h2 id="model-architecture">Architecture and training</h2>
            <KeyValueTable
              value={{ architecture: m.architecture, trainingParams: m.trainingParams }}
              label="architecture and training"
            />
          </section>
          {m.metrics || m.costs ? (
            <section aria-labelledby="model-metrics">
              <h2 id="model-metrics">Metrics and costs</h2>
              <KeyValueTable value={{ metrics: m.metrics, costs: m.costs }} label="metrics and costs" />
            </section>
          ) : null}
        </>
      ) : null}
    </>
  );
}

function Export({ model }: { model: ModelVersion }) {
  const key = useKey();
  const [state, setState] = useState<{ busy?: string; message?: string; error?: unknown }>({});
  async function download(format: 'onnx' | 'safetensors') {
    setState({ busy: format });
    try {
      const r = await downloadWithKey(
        key,
        `/models/${model.id}/export?format=${format}`,
        `${model.name}-v${model.version}.${format}`,
      );
      setState({ message: `Downloaded ${r.name} (${r.bytes.toLocaleString('en-US')} bytes)` });
    } catch (err) {
      setState({ error: err });
    }
  }
  return (
    <section aria-labelledby="model-export">
      <h2 id="model-export">Export</h2>
      {model.checkpointPath ? (
        <>
          <p className="muted">
            The trained checkpoint: safetensors as stored, or ONNX for a serving system that does not run the runtime.
          </p>
          <div className="form-actions">
            <button type="button" onClick={() => void download('onnx')} disabled={!!state.busy}>
              Download ONNX
            </button>
            <button type="button" className="secondary" onClick={() => void download('safetensors')} disabled={!!state.busy}>
              Download safetensors
            </button>
          </div>
        </>
      ) : (
        <p className="muted">
          No checkpoint: this version is a definition only (a <code>divide</code> tier or a trained model has one).
        </p>
      )}
      <div role="status">{state.busy ? `Preparing ${state.busy}…` : (state.message ?? '')}</div>
      {state.error ? <ErrorNotice title="Export failed" error={state.error} /> : null}
    </section>
  );
}
