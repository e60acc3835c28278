// Results: the table (with paging controls supplied by the caller), the
// timing line, CSV/JSON downloads, Arrow decoding and the chart of a
// group-by. The Arrow decoder and the chart library are loaded on first use
// so the first page stays small.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Timing, saveBlob } from './ui.jsx';

export async function decodeArrow(bytes) {
  const { tableFromIPC } = await import('@uwdata/flechette');
  const table = tableFromIPC(bytes, { useDate: true });
  return { columns: table.names, rows: table.toArray() };
}

export function cellText(v) {
  if (v === null || v === undefined) return 'null';
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'object') return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? x.toString() : x));
  return String(v);
}

export function columnsOf(rows) {
  const seen = [];
  for (const r of rows.slice(0, 50))
    for (const k of Object.keys(r)) if (!seen.includes(k)) seen.push(k);
  return seen;
}

function csvOf(columns, rows) {
  const q = (s) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const lines = [columns.map(q).join(',')];
  for (const r of rows) lines.push(columns.map((c) => q(r[c] == null ? '' : cellText(r[c]))).join(','));
  return lines.join('\r\n') + '\r\n';
}

export function ResultTable({ columns, rows }) {
  if (!rows.length) return <p class="muted" data-testid="no-rows">No rows.</p>;
  return (
    <div class="table-wrap" tabindex="0" aria-label="Results">
      <table class="results" data-testid="results">
        <thead>
          <tr>{columns.map((c) => <th scope="col">{c}</th>)}</tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              {columns.map((c) => (
                <td class={r[c] == null ? 'null' : typeof r[c] === 'number' ? 'num' : ''}>{cellText(r[c])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// result: {columns, rows, timing, format, page, pageSize}; onPage(n) or null.
export function Results({ result, onPage, filename, extraDownloads }) {
  if (!result) return null;
  const { columns, rows } = result;
  const dl = (kind) => {
    if (kind === 'csv') saveBlob(new Blob([csvOf(columns, rows)], { type: 'text/csv' }), `${filename}.csv`);
    else saveBlob(new Blob([JSON.stringify(rows, null, 2)], { type: 'application/json' }), `${filename}.json`);
  };
  return (
    <section class="result" aria-label="Result">
      <div class="row wrap">
        <Timing timing={result.timing} rows={rows.length} />
        <span class="muted">format: {result.format}</span>
        {result.truncated && <span class="state state-building">truncated at max_rows</span>}
        <span class="spacer" />
        <button type="button" onClick={() => dl('csv')} data-testid="download-csv">CSV</button>
        <button type="button" onClick={() => dl('json')} data-testid="download-json">JSON</button>
        {extraDownloads}
      </div>
      <ResultTable columns={columns} rows={rows} />
      {onPage && (
        <nav class="row pager" aria-label="Pages">
          <button type="button" disabled={result.page <= 1} onClick={() => onPage(result.page - 1)}
            data-testid="prev-page">← Previous</button>
          <span data-testid="page">page {result.page}</span>
          <button type="button" disabled={rows.length < result.pageSize} onClick={() => onPage(result.page + 1)}
            data-testid="next-page">Next →</button>
        </nav>
      )}
      <ChartPanel columns={columns} rows={rows} preferX={result.groupBy} />
    </section>
  );
}

// Bar or line chart of one label column against numeric columns: the picture
// of a group-by. Offered when the result has a numeric column and at most
// 500 rows.
function ChartPanel({ columns, rows, preferX }) {
  const numeric = columns.filter((c) => rows.some((r) => typeof r[c] === 'number'));
  const [type, setType] = useState('bar');
  const [x, setX] = useState('');
  const [shown, setShown] = useState(false);
  const canvas = useRef(null);
  const chart = useRef(null);
  const xCol = x && columns.includes(x) ? x : (preferX && preferX.find((c) => columns.includes(c))) || columns.find((c) => !numeric.includes(c)) || columns[0];
  const ys = numeric.filter((c) => c !== xCol);
  const usable = rows.length > 0 && rows.length <= 500 && ys.length > 0;

  useEffect(() => {
    if (!shown || !usable) return undefined;
    let dead = false;
    (async () => {
      const m = await import('./chart.js');
      if (dead) return;
      if (chart.current) chart.current.destroy();
      const palette = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2'];
      chart.current = new m.Chart(canvas.current, {
        type,
        data: {
          labels: rows.map((r) => cellText(r[xCol])),
          datasets: ys.map((c, i) => ({
            label: c,
            data: rows.map((r) => (typeof r[c] === 'number' ? r[c] : null)),
            backgroundColor: palette[i % palette.length],
            borderColor: palette[i % palette.length],
          })),
        },
        options: { animation: false, responsive: true, maintainAspectRatio: false },
      });
      canvas.current.dataset.rendered = String(rows.length);
    })();
    return () => {
      dead = true;
    };
  }, [shown, usable, type, xCol, rows, columns]);

  useEffect(() => () => chart.current && chart.current.destroy(), []);

  if (!usable) return null;
  return (
    <section class="chart" aria-label="Chart">
      <div class="row wrap">
        <button type="button" onClick={() => setShown(!shown)} aria-expanded={shown} data-testid="chart-toggle">
          {shown ? 'Hide chart' : 'Chart'}
        </button>
        {shown && (
          <>
            <label>type <select value={type} onChange={(e) => setType(e.target.value)} data-testid="chart-type">
              <option value="bar">bar</option>
              <option value="line">line</option>
            </select></label>
            <label>x <select value={xCol} onChange={(e) => setX(e.target.value)}>
              {columns.map((c) => <option value={c}>{c}</option>)}
            </select></label>
            <span class="muted">y: {ys.join(', ')}</span>
          </>
        )}
      </div>
      {shown && (
        <div class="chart-box">
          <canvas ref={canvas} data-testid="chart" role="img" aria-label={`${type} chart of ${ys.join(', ')} by ${xCol}`} />
        </div>
      )}
    </section>
  );
}
