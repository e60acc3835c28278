// Results: the table (headers sort, a row opens its detail), the pager with
// the total, the timing line, downloads and exports, the facets beside the
// table, Arrow decoding and the chart. The Arrow decoder and the chart
// library are loaded on first use so the first page stays small.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Num, apiUrl, call, isNum } from './api.js';
import { Timing, fmtInt, saveBlob } from './ui.jsx';

export async function decodeArrow(bytes) {
  const { tableFromIPC } = await import('@uwdata/flechette');
  const table = tableFromIPC(bytes, { useDate: true });
  return { columns: table.names, rows: table.toArray() };
}

export function cellText(v) {
  if (v === null || v === undefined) return 'null';
  if (v instanceof Num) return v.text;
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

// A cell a spreadsheet would run as a formula (=, @, tab, CR first, or + or -
// when it is not a number) is written with a leading ' so it shows as text
// (CSV injection: =HYPERLINK(...) must not become a link).
export function csvCell(s) {
  if (/^[=@\t\r]/.test(s) || (/^[+-]/.test(s) && !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s))) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvOf(columns, rows) {
  const lines = [columns.map(csvCell).join(',')];
  for (const r of rows) lines.push(columns.map((c) => csvCell(r[c] == null ? '' : cellText(r[c]))).join(','));
  return lines.join('\r\n') + '\r\n';
}

function textOf(data) {
  return typeof data === 'string' ? data : new TextDecoder().decode(data);
}

// Parses RFC 4180 CSV (quoted fields may hold commas, quotes and newlines) and
// writes it again through csvCell, so every cell gets the same treatment as
// csvOf gives a page.
export function neutraliseCsv(text) {
  const out = [];
  let row = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false; // "" (an empty string) stays apart from a NULL
  let i = 0;
  const endField = () => {
    row.push(field === '' && wasQuoted ? '""' : csvCell(field));
    field = '';
    wasQuoted = false;
  };
  const endRow = () => { endField(); out.push(row.join(',')); row = []; };
  while (i < text.length) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
      if (ch === '"') { quoted = false; i++; continue; }
      field += ch; i++; continue;
    }
    if (ch === '"') { quoted = true; wasQuoted = true; i++; continue; }
    if (ch === ',') { endField(); i++; continue; }
    if (ch === '\r' && text[i + 1] === '\n') { endRow(); i += 2; continue; }
    if (ch === '\n') { endRow(); i++; continue; }
    field += ch; i++;
  }
  if (field !== '' || row.length) endRow();
  return out.length ? out.join('\r\n') + '\r\n' : '';
}

// Every row the request selects, as CSV or NDJSON: the server streams them
// (/query/stream ?format=csv|ndjson); a server without those encoders sends
// the Arrow stream, written out here.
export async function exportAll(dataset, req, kind) {
  const body = { ...req };
  delete body.page;
  delete body.page_size;
  delete body.include_total;
  const name = `${dataset}.${kind === 'csv' ? 'csv' : 'ndjson'}`;
  const type = kind === 'csv' ? 'text/csv' : 'application/x-ndjson';
  const r = await call(`/datasets/${encodeURIComponent(dataset)}/query/stream`,
    { json: body, query: { format: kind }, accept: 'arrow' });
  const ct = r.headers.get('Content-Type') || '';
  if (!ct.startsWith('application/vnd.apache.arrow')) {
    // The server's CSV is the data as it is; the download a spreadsheet opens
    // gets its formula cells neutralised like the page download.
    const data = ct.startsWith('text/csv') ? neutraliseCsv(textOf(r.data)) : r.data;
    saveBlob(new Blob([data], { type: ct || type }), name);
    return;
  }
  const t = await decodeArrow(r.data);
  const text = kind === 'csv'
    ? csvOf(t.columns, t.rows)
    : t.rows.map((row) => JSON.stringify(row, (k, x) => (typeof x === 'bigint' ? x.toString() : x))).join('\n') + '\n';
  saveBlob(new Blob([text], { type }), name);
}

export function ResultTable({ columns, rows, onSort, sorted, onRow, selectedRow }) {
  if (!rows.length) return <p class="muted" data-testid="no-rows">No rows.</p>;
  return (
    <div class="table-wrap" tabindex="0" aria-label="Results">
      <table class="results" data-testid="results">
        <thead>
          <tr>{columns.map((c) => {
            const dir = sorted && sorted.col === c ? (sorted.dir || 'asc') : null;
            return (
              <th scope="col" aria-sort={dir ? (dir === 'asc' ? 'ascending' : 'descending') : undefined}>
                {onSort
                  ? <button type="button" class="sort" onClick={() => onSort(c)} title={`Sort by ${c}`}>{c}</button>
                  : c}
              </th>
            );
          })}</tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr class={selectedRow === i ? 'selected' : ''} onClick={onRow ? () => onRow(i) : undefined}>
              {columns.map((c) => (
                <td class={r[c] == null ? 'null' : isNum(r[c]) || typeof r[c] === 'bigint' ? 'num' : ''}>{cellText(r[c])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RowDetail({ columns, row, onClose }) {
  useEffect(() => {
    const f = (e) => { if (e.key === 'Escape') onClose(); };
    addEventListener('keydown', f);
    return () => removeEventListener('keydown', f);
  }, [onClose]);
  return (
    <aside class="row-detail" aria-label="Row detail" data-testid="row-detail">
      <div class="row"><h3>Row</h3><span class="spacer" />
        <button type="button" class="link" onClick={onClose} aria-label="Close row detail">×</button></div>
      <dl>
        {columns.map((c) => (<><dt>{c}</dt><dd class={row[c] == null ? 'null' : ''}>{cellText(row[c])}</dd></>))}
      </dl>
    </aside>
  );
}

// The top values of a few columns among the rows the request selects
// (POST /facets); a click filters by the value.
function Facets({ dataset, schema, request, onFacet }) {
  const [data, setData] = useState(null);
  const key = JSON.stringify(request?.predicates || []);
  const cols = (schema?.columns || []).filter((c) => ['string', 'bool'].includes(c.logical)).map((c) => c.name).slice(0, 4);
  useEffect(() => {
    setData(null);
    if (!dataset || !cols.length || (request?.group_by && request.group_by.length)) return;
    let dead = false;
    call(`/datasets/${encodeURIComponent(dataset)}/facets`, {
      json: { columns: cols, predicates: request?.predicates || [], limit: 6 },
    }).then((r) => { if (!dead) setData(r.data); }, () => {});
    return () => { dead = true; };
  }, [dataset, key, cols.join(',')]);
  if (!data) return null;
  return (
    <aside class="facets" aria-label="Facets" data-testid="facets">
      {data.facets.map((f) => {
        const max = Math.max(1, ...f.values.map((v) => v.count));
        return (
          <section class="facet" data-column={f.column}>
            <h4>{f.column} <span class="muted">{fmtInt(f.distinct)}</span></h4>
            <ul>
              {f.values.map((v) => (
                <li>
                  <button type="button" class="facet-value" onClick={() => onFacet(f.column, v.value instanceof Num ? Number(v.value) : v.value)}
                    title={`Filter: ${f.column} = ${cellText(v.value)}`}>
                    <span class="bar" style={{ width: `${(100 * v.count) / max}%` }} />
                    <span class="label">{v.value === null ? 'null' : cellText(v.value)}</span>
                    <span class="count">{fmtInt(v.count)}</span>
                  </button>
                </li>
              ))}
            </ul>
            {f.other_values > 0 && <p class="muted small">{fmtInt(f.other_values)} more ({fmtInt(f.other_rows)} rows)</p>}
          </section>
        );
      })}
    </aside>
  );
}

// result: {columns, rows, timing, format, page, pageSize, total, request};
// onPage(n) or null.
export function Results({ result, onPage, filename, extraDownloads, onSort, dataset, schema, onFacet, onCountAll }) {
  const [detail, setDetail] = useState(null);
  useEffect(() => setDetail(null), [result]);
  if (!result) return null;
  const { columns, rows } = result;
  const dl = (kind) => {
    if (kind === 'csv') saveBlob(new Blob([csvOf(columns, rows)], { type: 'text/csv' }), `${filename}.csv`);
    else saveBlob(new Blob([JSON.stringify(rows, null, 2)], { type: 'application/json' }), `${filename}.json`);
  };
  const sorted = result.request?.order_by?.[0];
  const pages = result.total != null && result.pageSize ? Math.max(1, Math.ceil(result.total / result.pageSize)) : null;
  return (
    <section class="result" aria-label="Result">
      <div class="row wrap">
        <Timing timing={result.timing} rows={rows.length} />
        {result.total != null
          ? <span class="total" data-testid="total">of <b>{fmtInt(result.total)}</b> {result.grouped ? (result.total === 1 ? 'group' : 'groups') : (result.total === 1 ? 'matching row' : 'matching rows')}</span>
          : onCountAll && result.request && <button type="button" class="small" onClick={onCountAll} data-testid="count-all">Count all</button>}
        <span class="muted">format: {result.format}</span>
        {result.truncated && <span class="state state-building">truncated at max_rows</span>}
        <span class="spacer" />
        <button type="button" onClick={() => dl('csv')} data-testid="download-csv">CSV</button>
        <button type="button" onClick={() => dl('json')} data-testid="download-json">JSON</button>
        {extraDownloads}
      </div>
      <div class={onFacet ? 'result-grid' : ''}>
        <div class="result-main">
          <ResultTable columns={columns} rows={rows} onSort={onSort} sorted={sorted}
            onRow={(i) => setDetail(detail === i ? null : i)} selectedRow={detail} />
          {onPage && (
            <nav class="row pager" aria-label="Pages">
              <button type="button" disabled={result.page <= 1} onClick={() => onPage(result.page - 1)}
                data-testid="prev-page">← Previous</button>
              <span data-testid="page">page {result.page}</span>
              {pages && <span class="muted" data-testid="pages">of {fmtInt(pages)}</span>}
              <button type="button" disabled={rows.length < result.pageSize || (pages && result.page >= pages)} onClick={() => onPage(result.page + 1)}
                data-testid="next-page">Next →</button>
            </nav>
          )}
        </div>
        {detail !== null && rows[detail] && <RowDetail columns={columns} row={rows[detail]} onClose={() => setDetail(null)} />}
        {onFacet && detail === null && <Facets dataset={dataset} schema={schema} request={result.request} onFacet={onFacet} />}
      </div>
      <ChartPanel columns={columns} rows={rows} preferX={result.groupBy} />
    </section>
  );
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2'];
const TIMELIKE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

// What a chart of these rows should be: the x column (the group_by, or the
// first column that is not a number), the measures (numeric columns), and
// whether x is a time (a bucketed group_by: a line over time).
export function chartPlan(columns, rows, preferX, xChoice) {
  const numeric = columns.filter((c) => rows.some((r) => isNum(r[c])));
  const first = preferX && preferX.map((g) => (typeof g === 'string' ? g : g.alias || g.col)).find((c) => columns.includes(c));
  const xCol = xChoice && columns.includes(xChoice) ? xChoice : first || columns.find((c) => !numeric.includes(c)) || columns[0];
  const ys = numeric.filter((c) => c !== xCol);
  const time = rows.length > 1 && rows.every((r) => r[xCol] == null || (typeof r[xCol] === 'string' && TIMELIKE.test(r[xCol])) || r[xCol] instanceof Date);
  return { xCol, ys, time };
}

// One axis per measure: measures of different sizes (an average of 22 beside
// counts of 800) each get their own scale, left and right, so none is flat.
function ChartPanel({ columns, rows, preferX }) {
  const [type, setType] = useState('auto');
  const [x, setX] = useState('');
  const [shown, setShown] = useState(false);
  const canvas = useRef(null);
  const chart = useRef(null);
  const { xCol, ys, time } = chartPlan(columns, rows, preferX, x);
  const kind = type === 'auto' ? (time ? 'line' : 'bar') : type;
  const usable = rows.length > 0 && rows.length <= 2000 && ys.length > 0;

  useEffect(() => {
    if (!shown || !usable) return undefined;
    let dead = false;
    (async () => {
      const m = await import('./chart.js');
      if (dead) return;
      if (chart.current) chart.current.destroy();
      const data = time ? [...rows].sort((a, b) => String(a[xCol]).localeCompare(String(b[xCol]))) : rows;
      const scales = { x: { ticks: { maxRotation: 0, autoSkip: true } } };
      ys.forEach((c, i) => {
        scales[`y${i}`] = {
          type: 'linear', position: i % 2 === 0 ? 'left' : 'right',
          grid: { drawOnChartArea: i === 0 },
          title: { display: true, text: c, color: PALETTE[i % PALETTE.length] },
          ticks: { color: PALETTE[i % PALETTE.length] },
          beginAtZero: kind === 'bar',
        };
      });
      chart.current = new m.Chart(canvas.current, {
        type: kind,
        data: {
          labels: data.map((r) => cellText(r[xCol])),
          datasets: ys.map((c, i) => ({
            label: c,
            data: data.map((r) => (isNum(r[c]) ? Number(r[c]) : null)),
            backgroundColor: PALETTE[i % PALETTE.length] + (kind === 'bar' ? 'cc' : ''),
            borderColor: PALETTE[i % PALETTE.length],
            yAxisID: `y${i}`,
            pointRadius: data.length > 60 ? 0 : 2,
            tension: 0.2,
          })),
        },
        options: {
          animation: false, responsive: true, maintainAspectRatio: false,
          interaction: { mode: 'index', intersect: false },
          scales,
        },
      });
      canvas.current.dataset.rendered = String(rows.length);
      canvas.current.dataset.axes = String(ys.length);
    })();
    return () => {
      dead = true;
    };
  }, [shown, usable, kind, xCol, rows, columns]);

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
            <label>type <select value={type === 'auto' ? kind : type} onChange={(e) => setType(e.target.value)} data-testid="chart-type">
              <option value="bar">bar</option>
              <option value="line">line</option>
            </select></label>
            <label>x <select value={xCol} onChange={(e) => setX(e.target.value)}>
              {columns.map((c) => <option value={c}>{c}</option>)}
            </select></label>
            <span class="muted">y: {ys.join(', ')}{ys.length > 1 ? ' (one axis each)' : ''}{time ? ' · over time' : ''}</span>
          </>
        )}
      </div>
      {shown && (
        <div class="chart-box">
          <canvas ref={canvas} data-testid="chart" role="img" aria-label={`${kind} chart of ${ys.join(', ')} by ${xCol}`} />
        </div>
      )}
    </section>
  );
}

// A small histogram or top-values bar list (the schema view, /summary).
export function MiniHistogram({ summary }) {
  const h = summary.histogram;
  if (h && h.buckets.length) {
    const max = Math.max(1, ...h.buckets.map((b) => b.count));
    const w = 120, hh = 28, bw = w / h.buckets.length;
    return (
      <svg class="mini-hist" width={w} height={hh} viewBox={`0 0 ${w} ${hh}`} role="img"
        aria-label={`histogram of ${summary.name}: ${h.buckets.length} buckets from ${cellText(h.buckets[0].lo)} to ${cellText(h.buckets[h.buckets.length - 1].hi)}`}>
        {h.buckets.map((b, i) => {
          const bh = b.count ? Math.max(1, (hh * b.count) / max) : 0;
          return <rect x={i * bw + 0.5} y={hh - bh} width={Math.max(1, bw - 1)} height={bh}><title>{`${cellText(b.lo)} – ${cellText(b.hi)}: ${fmtInt(b.count)}`}</title></rect>;
        })}
      </svg>
    );
  }
  if (summary.top_values && summary.top_values.length) {
    const max = Math.max(1, ...summary.top_values.map((t) => t.count));
    return (
      <ul class="mini-top">
        {summary.top_values.slice(0, 4).map((t) => (
          <li title={`${cellText(t.value)}: ${fmtInt(t.count)}`}><span class="bar" style={{ width: `${(100 * t.count) / max}%` }} /><span class="label">{cellText(t.value)}</span></li>
        ))}
      </ul>
    );
  }
  return null;
}

export { apiUrl };
