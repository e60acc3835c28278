// The Datasets tab: every dataset with its state badge and status fields,
// one dataset's schema and sample, and the admin actions (reload, reload-all
// with a confirmation, delete of runtime datasets).
import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import { ConfirmDialog, ErrorBox, StateBadge, fmtInt } from './ui.jsx';
import { MiniHistogram, ResultTable, cellText } from './results.jsx';

function when(ts) {
  if (!ts) return '–';
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleString();
}

export function DatasetList({ datasets, selected, onSelect, runtime, queriesAvailable, onChanged, onQuery }) {
  const [confirm, setConfirm] = useState(null); // {kind, name}
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);

  async function act(kind, name) {
    setConfirm(null);
    setError(null);
    setNotice(null);
    try {
      if (kind === 'reload') {
        const r = await call(`/datasets/${encodeURIComponent(name)}/reload`, { method: 'POST' });
        setNotice(`Reloaded ${name}: ${fmtInt(r.data.rows)} rows in ${r.data.elapsed_ms} ms`);
      } else if (kind === 'reload-all') {
        const r = await call('/datasets/reload-all', { method: 'POST' });
        setNotice(`Reload-all enqueued: ${r.data.enqueued.join(', ') || 'none'}` +
          (r.data.skipped.length ? `; skipped: ${r.data.skipped.join(', ')}` : ''));
      } else if (kind === 'delete') {
        await call(`/queries/${encodeURIComponent(name)}`, { method: 'DELETE' });
        setNotice(`Deleted ${name}`);
        if (selected === name) onSelect(null);
      }
    } catch (e) {
      setError(e);
    }
    onChanged();
  }

  return (
    <section class="datasets" aria-label="Datasets">
      <div class="row wrap">
        <h2>Datasets</h2>
        <span class="spacer" />
        <button type="button" onClick={onChanged} data-testid="refresh">Refresh</button>
        <button type="button" onClick={() => setConfirm({ kind: 'reload-all' })} data-testid="reload-all">Reload all…</button>
      </div>
      <ErrorBox error={error} onClose={() => setError(null)} />
      {notice && <p class="notice" role="status" data-testid="notice">{notice}</p>}
      <div class="table-wrap">
        <table class="list" data-testid="dataset-list">
          <thead>
            <tr>
              <th scope="col">Name</th><th scope="col">State</th><th scope="col">Kind</th>
              <th scope="col" class="hide-narrow">Residency</th><th scope="col">Rows</th>
              <th scope="col" class="hide-narrow">Columns</th><th scope="col" class="hide-narrow">Last refresh</th>
              <th scope="col" class="hide-narrow">Next refresh</th><th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {datasets.map((d) => (
              <tr class={d.name === selected ? 'selected' : ''} data-name={d.name}>
                <td><button type="button" class="link" onClick={() => onSelect(d.name)} aria-current={d.name === selected}>{d.name}</button></td>
                <td>
                  <StateBadge state={d.state} />
                  {d.last_error && <div class="last-error" title={d.last_error}>{d.last_error}</div>}
                </td>
                <td>{d.kind}{runtime.includes(d.name) && <span class="tag">runtime</span>}</td>
                <td class="hide-narrow">{d.residency}</td>
                <td class="num">{fmtInt(d.rows)}</td>
                <td class="num hide-narrow">{d.columns}</td>
                <td class="hide-narrow" title={d.refresh_source ? `by ${d.refresh_source}, ${d.last_refresh_duration_ms} ms` : ''}>{when(d.last_refresh_at)}</td>
                <td class="hide-narrow">{when(d.next_refresh_at)}</td>
                <td><div class="actions">
                  <button type="button" class="small" onClick={() => onQuery(d.name)} disabled={d.state !== 'published'}>Query</button>
                  <button type="button" class="small" onClick={() => act('reload', d.name)} data-testid={`reload-${d.name}`}>Reload</button>
                  {queriesAvailable && runtime.includes(d.name) && (
                    <button type="button" class="small danger" onClick={() => setConfirm({ kind: 'delete', name: d.name })}
                      data-testid={`delete-${d.name}`}>Delete…</button>
                  )}
                </div></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!datasets.length && <p class="muted">No datasets.</p>}
      <ConfirmDialog open={!!confirm}
        title={confirm?.kind === 'delete' ? `Delete ${confirm.name}?` : 'Reload every dataset?'}
        confirmLabel={confirm?.kind === 'delete' ? 'Delete' : 'Reload all'}
        onCancel={() => setConfirm(null)} onConfirm={() => act(confirm.kind, confirm.name)}>
        {confirm?.kind === 'delete'
          ? <p>The runtime dataset <b>{confirm.name}</b> is unregistered and its stored copy removed.</p>
          : <p>Every reloadable dataset is rebuilt from its source, in dependency order. Queries keep answering from the current copies meanwhile.</p>}
      </ConfirmDialog>
      {selected && <DatasetDetail name={selected} status={datasets.find((d) => d.name === selected)} />}
    </section>
  );
}

function DatasetDetail({ name, status }) {
  const [schema, setSchema] = useState(null);
  const [stats, setStats] = useState(null);
  const [error, setError] = useState(null);
  const gen = status?.last_refresh_at;
  useEffect(() => {
    setError(null);
    setStats(null);
    if (status && status.state !== 'published') {
      setSchema(null);
      return;
    }
    call(`/datasets/${encodeURIComponent(name)}/schema`).then((r) => setSchema(r.data), (e) => { setSchema(null); setError(e); });
    // Column statistics (computed once per generation by the server).
    call(`/datasets/${encodeURIComponent(name)}/summary`).then(
      (r) => setStats(Object.fromEntries(r.data.columns.map((c) => [c.name, c]))), () => setStats({}));
  }, [name, gen, status?.state]);
  return (
    <section class="detail" aria-label={`Dataset ${name}`} data-testid="dataset-detail">
      <h3>{name} {status && <StateBadge state={status.state} />}</h3>
      {status && (
        <dl class="status">
          <dt>kind</dt><dd>{status.kind}</dd>
          <dt>residency</dt><dd>{status.residency}{status.lazy ? ' (lazy)' : ''}</dd>
          <dt>rows</dt><dd>{fmtInt(status.rows)}</dd>
          <dt>columns</dt><dd>{status.columns}</dd>
          <dt>last refresh</dt><dd>{when(status.last_refresh_at)} {status.refresh_source && `(${status.refresh_source}, ${status.last_refresh_duration_ms} ms)`}</dd>
          <dt>next refresh</dt><dd>{when(status.next_refresh_at)}</dd>
          <dt>failures</dt><dd>{status.consecutive_failures}</dd>
          {status.depends_on?.length > 0 && (<><dt>depends on</dt><dd>{status.depends_on.join(', ')}</dd></>)}
          {status.generation_id && (<><dt>generation</dt><dd><code>{status.generation_id}</code></dd></>)}
          {status.last_error && (<><dt>last error</dt><dd class="last-error">{status.last_error}</dd></>)}
        </dl>
      )}
      <ErrorBox error={error} />
      {schema && (
        <>
          <h4>Schema</h4>
          <div class="table-wrap">
            <table class="list" data-testid="schema" data-stats={stats ? 'loaded' : 'loading'}>
              <thead><tr><th scope="col">Column</th><th scope="col">Type</th><th scope="col">Logical</th><th scope="col">Nullable</th><th scope="col">Indexed</th>
                <th scope="col" class="hide-narrow">Nulls</th><th scope="col" class="hide-narrow">Distinct</th><th scope="col" class="hide-narrow">Range</th><th scope="col" class="hide-narrow">Distribution</th></tr></thead>
              <tbody>
                {schema.columns.map((c) => {
                  const st = stats && stats[c.name];
                  return (
                    <tr data-column={c.name}><td>{c.name}</td><td><code>{c.type}</code></td><td>{c.logical}</td><td>{c.nullable ? 'yes' : 'no'}</td><td>{schema.indexed.includes(c.name) ? 'yes' : ''}</td>
                      <td class="num hide-narrow">{st ? fmtInt(st.null_count) : ''}</td>
                      <td class="num hide-narrow">{st ? `~${fmtInt(st.approx_distinct)}` : ''}</td>
                      <td class="hide-narrow range">{st && st.min != null ? <>{cellText(st.min)} … {cellText(st.max)}{st.mean != null && <span class="muted"> · mean {Number(st.mean).toPrecision(4)}</span>}</> : ''}</td>
                      <td class="hide-narrow">{st && <MiniHistogram summary={st} />}</td></tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <h4>Sample row</h4>
          {schema.sample ? <ResultTable columns={schema.columns.map((c) => c.name)} rows={[schema.sample]} /> : <p class="muted">No rows.</p>}
        </>
      )}
    </section>
  );
}
