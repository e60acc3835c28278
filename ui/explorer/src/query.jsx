// The Query tab: a builder for every field of the query request, the JSON it
// sends (shown and editable), and the results with paging, timing, the
// JSON/Arrow toggle, downloads and the chart.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { call, apiUrl, snippets, Num, parseJson } from './api.js';
import { ErrorBox, saveBlob } from './ui.jsx';
import { Results, columnsOf, decodeArrow, exportAll } from './results.jsx';
import { hashOf, pushRoute } from './route.js';

export const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'between', 'is_null', 'is_not_null'];
const AGGS = ['count', 'sum', 'avg', 'min', 'max', 'count_distinct', 'median', 'quantile', 'stddev'];

const emptyBuilder = () => ({
  columns: [], predicates: [], order_by: [], group_by: [], aggregations: [], having: [],
  distinct: false, limit: '', page: 1, page_size: 100,
});

// A typed value from a text field, by the column's logical type. A number a
// double cannot hold as written (an id past 2^53, a decimal of 17 digits)
// stays its text (a Num, sent as written): Number() made 9007199254740993
// 9007199254740992, and the query asked for another row than it showed.
function typed(text, logical) {
  const t = text.trim();
  if (['int', 'float', 'decimal'].includes(logical) && t !== '' && !Number.isNaN(Number(t))) {
    const n = Number(t);
    return String(n) !== t && /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(t) ? new Num(t) : n;
  }
  if (logical === 'bool' && (t === 'true' || t === 'false')) return t === 'true';
  return text;
}

function predicateJson(p, logicalOf) {
  const out = { col: p.col, op: p.op };
  const lt = logicalOf(p.col);
  if (p.op === 'is_null' || p.op === 'is_not_null') return out;
  if (p.op === 'in') out.val = p.val.split(',').map((s) => typed(s.trim(), lt)).filter((v) => v !== '');
  else if (p.op === 'between') out.val = [typed(p.val, lt), typed(p.val2 || '', lt)];
  else out.val = typed(p.val, lt);
  return out;
}

// The request the builder describes (only fields that differ from defaults).
export function buildRequest(b, schema) {
  const logicalOf = (c) => schema?.columns.find((x) => x.name === c)?.logical || 'string';
  const r = {};
  if (b.columns.length && !b.group_by.length) r.columns = b.columns;
  if (b.predicates.length) r.predicates = b.predicates.filter((p) => p.col).map((p) => predicateJson(p, logicalOf));
  if (b.order_by.length) r.order_by = b.order_by.filter((o) => o.col).map((o) => ({ col: o.col, dir: o.dir }));
  if (b.group_by.length) r.group_by = b.group_by;
  if (b.aggregations.length)
    r.aggregations = b.aggregations.map((a) => {
      const x = { op: a.op };
      if (a.col) x.col = a.col;
      if (a.alias) x.alias = a.alias;
      return x;
    });
  if (b.having.length) {
    // an aggregation alias has the type of its result: a number, or the
    // column's own type for min/max
    const havingLogical = (c) => {
      const a = b.aggregations.find((x) => aggAlias(x) === c);
      if (!a) return logicalOf(c);
      return a.op === 'min' || a.op === 'max' ? logicalOf(a.col) : 'float';
    };
    r.having = b.having.filter((p) => p.col).map((p) => predicateJson(p, havingLogical));
  }
  if (b.distinct) r.distinct = true;
  if (b.limit !== '' && b.limit != null) r.limit = Number(b.limit);
  if (Number(b.page) > 1) r.page = Number(b.page);
  r.page_size = Number(b.page_size) || 100;
  return r;
}

function aggAlias(a) {
  return a.alias || (a.col ? `${a.op}_${a.col}` : 'count');
}

// The builder for a request (a shared URL), or null when the builder cannot
// show it all (bucketed group_by, a quantile's q, ...): then the JSON box
// shows it as edited.
function fromRequest(r) {
  const b = emptyBuilder();
  const known = ['columns', 'predicates', 'order_by', 'group_by', 'aggregations', 'having', 'distinct', 'limit', 'page', 'page_size'];
  if (!r || typeof r !== 'object' || Object.keys(r).some((k) => !known.includes(k))) return null;
  const pred = (p) => {
    if (!p || typeof p !== 'object') return null;
    const out = { col: p.col, op: p.op, val: '' };
    if (Array.isArray(p.val) && p.op === 'between') [out.val, out.val2] = p.val.map(String);
    else if (Array.isArray(p.val)) out.val = p.val.join(', ');
    else if (p.val !== undefined) out.val = String(p.val);
    return out;
  };
  try {
    b.columns = r.columns || [];
    b.predicates = (r.predicates || []).map(pred);
    b.order_by = (r.order_by || []).map((o) => ({ col: o.col, dir: o.dir || 'asc' }));
    if ((r.group_by || []).some((g) => typeof g !== 'string')) return null;
    b.group_by = r.group_by || [];
    if ((r.aggregations || []).some((a) => a.q !== undefined)) return null;
    b.aggregations = (r.aggregations || []).map((a) => ({ op: a.op, col: a.col || '', alias: a.alias || '' }));
    b.having = (r.having || []).map(pred);
    b.distinct = !!r.distinct;
    b.limit = r.limit == null ? '' : String(r.limit);
    b.page = r.page || 1;
    b.page_size = r.page_size || 100;
  } catch (_) {
    return null;
  }
  if (b.predicates.includes(null) || b.having.includes(null)) return null;
  return b;
}

// The request for the total: the same rows, counted (one row of data).
function totalRequest(req) {
  return { ...req, include_total: true, page: 1, page_size: 1 };
}

function Rows({ label, items, onAdd, children, testid }) {
  return (
    <fieldset class="rows" data-testid={testid}>
      <legend>{label}</legend>
      {items.map((it, i) => children(it, i))}
      <button type="button" class="small" onClick={onAdd}>+ {label.toLowerCase().replace(/s$/, '')}</button>
    </fieldset>
  );
}

function Multi({ label, options, value, onChange, testid }) {
  return (
    <fieldset class="multi" data-testid={testid}>
      <legend>{label}</legend>
      {options.map((c) => (
        <label class="check">
          <input type="checkbox" checked={value.includes(c)} value={c}
            onChange={(e) => onChange(e.target.checked ? [...value, c] : value.filter((x) => x !== c))} />
          {c}
        </label>
      ))}
    </fieldset>
  );
}

function PredicateRow({ p, cols, onChange, onRemove, idx, kind }) {
  const set = (k, v) => onChange({ ...p, [k]: v });
  const needsVal = p.op !== 'is_null' && p.op !== 'is_not_null';
  return (
    <div class="row wrap pred" data-testid={`${kind}-${idx}`}>
      <select aria-label="column" value={p.col} onChange={(e) => set('col', e.target.value)} name="col">
        <option value="">column…</option>
        {cols.map((c) => <option value={c}>{c}</option>)}
      </select>
      <select aria-label="operator" value={p.op} onChange={(e) => set('op', e.target.value)} name="op">
        {OPS.map((o) => <option value={o}>{o}</option>)}
      </select>
      {needsVal && (
        <input aria-label={p.op === 'between' ? 'from' : 'value'} name="val" value={p.val}
          placeholder={p.op === 'in' ? 'a, b, c' : p.op === 'between' ? 'from' : 'value'}
          onInput={(e) => set('val', e.target.value)} />
      )}
      {p.op === 'between' && (
        <input aria-label="to" name="val2" value={p.val2 || ''} placeholder="to" onInput={(e) => set('val2', e.target.value)} />
      )}
      <button type="button" class="small" aria-label="remove" onClick={onRemove}>×</button>
    </div>
  );
}

export function QueryTab({ datasets, selected, params = {}, onSelect }) {
  const [schema, setSchema] = useState(null);
  const [b, setB] = useState(emptyBuilder());
  // The JSON box shows the builder's request until the user edits it; it is
  // derived while rendering, so a click right after a change sends that change.
  const [editedText, setEditedText] = useState(null);
  const [format, setFormat] = useState(params.fmt === 'arrow' ? 'arrow' : 'json');
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [copyAs, setCopyAs] = useState(null);
  const abort = useRef(null);
  const ranQ = useRef(null);  // the ?q= this tab ran last (its own URL)

  useEffect(() => {
    setSchema(null);
    setResult(null);
    setError(null);
    setB(emptyBuilder());
    setEditedText(null);
    ranQ.current = null;
    if (!selected) return;
    call(`/datasets/${encodeURIComponent(selected)}/schema`).then((r) => setSchema(r.data), setError);
  }, [selected]);

  // A URL with ?q= (shared, reloaded, or back/forward): show it and run it.
  useEffect(() => {
    if (!schema || !params.q || params.q === ranQ.current) return;
    let req;
    try {
      req = parseJson(params.q); // numbers as written (ids past 2^53)
    } catch (e) {
      setError({ message: `the URL's query is not valid JSON: ${e.message}`, code: 'invalid_json' });
      return;
    }
    const fb = fromRequest(req);
    if (fb) {
      setB(fb);
      setEditedText(null);
    } else {
      setEditedText(JSON.stringify(req, null, 2));
    }
    if (params.fmt === 'arrow' || params.fmt === 'json') setFormat(params.fmt);
    ranQ.current = params.q;
    run(null, req, params.fmt === 'arrow' ? 'arrow' : 'json', false);
  }, [schema, params.q, params.fmt]);

  const generated = useMemo(() => JSON.stringify(buildRequest(b, schema), null, 2), [b, schema]);
  const text = editedText ?? generated;
  const edited = editedText !== null;

  const cols = schema ? schema.columns.map((c) => c.name) : [];
  const havingCols = [...b.group_by, ...b.aggregations.map(aggAlias)];
  // Functional updates: two events handled before the next render (a fill
  // right after another, a late change event) each apply to the latest
  // state instead of the one this render saw, so no edit is lost.
  const updWith = (k, f) => {
    setB((prev) => ({ ...prev, [k]: f(prev[k]) }));
    setEditedText(null);
  };
  const upd = (k, v) => updWith(k, () => v);
  const updAt = (k, i, v) => updWith(k, (xs) => xs.map((x, j) => (j === i ? v : x)));
  const delAt = (k, i) => updWith(k, (xs) => xs.filter((_, j) => j !== i));

  function currentRequest() {
    try {
      return parseJson(text);
    } catch (e) {
      setError({ message: `the request is not valid JSON: ${e.message}`, code: 'invalid_json' });
      return null;
    }
  }

  // Runs req (default: the JSON box). pageOverride: the pager's page (the
  // total stays). remember: put the request in the URL (a history entry).
  async function run(pageOverride, given, fmtGiven, remember = true) {
    setError(null);
    let req = given || currentRequest();
    if (!req) return;
    const fmt = fmtGiven || format;
    if (pageOverride) {
      req = { ...req, page: pageOverride };
      if (edited) setEditedText(JSON.stringify(req, null, 2));
      else setB((prev) => ({ ...prev, page: pageOverride }));
    }
    if (remember) {
      const q = JSON.stringify(req);
      ranQ.current = q;
      const h = hashOf('query', selected, { q, fmt: fmt === 'arrow' ? 'arrow' : '' });
      if (location.hash !== h) pushRoute(h);
    }
    if (abort.current) abort.current.abort();
    const ctl = new AbortController();
    abort.current = ctl;
    setBusy(true);
    const path = `/datasets/${encodeURIComponent(selected)}/query`;
    try {
      let res;
      if (fmt === 'arrow') {
        const r = await call(path, { json: req, query: { format: 'arrow' }, accept: 'arrow', signal: ctl.signal });
        const t = await decodeArrow(r.data);
        res = { ...t, timing: r.timing, page: Number(r.headers.get('X-Page')) || 1, pageSize: Number(r.headers.get('X-Page-Size')) || 0 };
      } else {
        const r = await call(path, { json: req, signal: ctl.signal });
        res = { rows: r.data.data, columns: columnsOf(r.data.data), timing: r.timing, page: r.data.page, pageSize: r.data.page_size };
      }
      if (!res.columns.length && req.columns) res.columns = req.columns;
      const grouped = !!((req.group_by && req.group_by.length) || req.distinct);
      const total = pageOverride && result?.total != null && result.request
        && JSON.stringify({ ...result.request, page: 1 }) === JSON.stringify({ ...req, page: 1 })
        ? result.total
        : await totalOf(req, res, grouped, ctl.signal);
      setResult({ ...res, format: fmt, groupBy: req.group_by, request: req, total, grouped });
    } catch (e) {
      // A new error replaces the old answer: stale rows never sit under it.
      setResult(null);
      setError(e);
    } finally {
      if (abort.current === ctl) abort.current = null;
      setBusy(false);
    }
  }

  // How many rows the request selects over every page: known from a page
  // that is not full; else /count (the index or the statistics answer it)
  // for plain queries; grouped ones are counted on demand (countAll).
  async function totalOf(req, res, grouped, signal) {
    const size = res.pageSize || req.page_size || 1000;
    const page = res.page || 1;
    if (res.rows.length < size && (page === 1 || res.rows.length > 0))
      return (page - 1) * size + res.rows.length;
    if (grouped) return null;
    try {
      const r = await call(`/datasets/${encodeURIComponent(selected)}/count`,
        { json: req.predicates ? { predicates: req.predicates } : {}, signal });
      const n = r.data.count;
      return req.limit != null && req.limit < n ? req.limit : n;
    } catch (_) {
      return null;
    }
  }

  async function countAll() {
    if (!result?.request) return;
    try {
      const r = await call(`/datasets/${encodeURIComponent(selected)}/query`, { json: totalRequest(result.request) });
      setResult({ ...result, total: r.data.total });
    } catch (e) {
      setError(e);
    }
  }

  function cancel() {
    if (abort.current) abort.current.abort();
  }

  // Click on a header: sort by it (ascending, then descending, then not).
  function sortBy(col) {
    const req = currentRequest();
    if (!req) return;
    const cur = (req.order_by || [])[0];
    let order;
    if (!cur || cur.col !== col) order = [{ col, dir: 'asc' }];
    else if ((cur.dir || 'asc') === 'asc') order = [{ col, dir: 'desc' }];
    else order = [];
    const next = { ...req, order_by: order, page: 1 };
    if (!order.length) delete next.order_by;
    if (next.page === 1) delete next.page;
    const fb = fromRequest(next);
    if (fb && !edited) setB(fb);
    else setEditedText(JSON.stringify(next, null, 2));
    run(null, next);
  }

  // Click on a facet value: filter by it.
  function filterBy(col, value) {
    const req = currentRequest();
    if (!req) return;
    const p = value === null ? { col, op: 'is_null' } : { col, op: 'eq', val: value };
    const next = { ...req, predicates: [...(req.predicates || []), p] };
    delete next.page;
    const fb = fromRequest(next);
    if (fb && !edited) setB(fb);
    else setEditedText(JSON.stringify(next, null, 2));
    run(null, next);
  }

  async function downloadParquet() {
    setError(null);
    try {
      const r = await call(`/datasets/${encodeURIComponent(selected)}/all.parquet`, { accept: 'blob' });
      saveBlob(r.data, `${selected}.parquet`);
    } catch (e) {
      setError(e);
    }
  }

  async function exportRows(kind) {
    const req = currentRequest();
    if (!req) return;
    setError(null);
    setBusy(true);
    try {
      await exportAll(selected, req, kind);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  const onKey = (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    } else if (e.key === 'Escape' && busy) {
      e.preventDefault();
      cancel();
    }
  };

  const showCopy = (kind) => {
    const req = currentRequest();
    if (!req) return;
    const sn = snippets('POST', `/datasets/${selected}/query`, req);
    setCopyAs({ kind, text: sn[kind] });
    if (navigator.clipboard) navigator.clipboard.writeText(sn[kind]).catch(() => {});
  };

  return (
    <div class="query" onKeyDown={onKey}>
      <div class="row wrap">
        <label>Dataset{' '}
          <select value={selected || ''} onChange={(e) => onSelect(e.target.value)} data-testid="query-dataset">
            <option value="">choose…</option>
            {datasets.filter((d) => d.state === 'published' || d.rows > 0).map((d) => <option value={d.name}>{d.name}</option>)}
          </select>
        </label>
        {schema && <span class="muted">{schema.rows.toLocaleString('en-US')} rows, {schema.columns.length} columns</span>}
      </div>
      <ErrorBox error={error} onClose={() => setError(null)} />
      {schema && (
        <div class="builder-grid">
          <form class="builder" onSubmit={(e) => { e.preventDefault(); run(); }} aria-label="Query builder">
            <Multi label="Columns" options={cols} value={b.columns} onChange={(v) => upd('columns', v)} testid="b-columns" />
            <Rows label="Predicates" testid="b-predicates" items={b.predicates}
              onAdd={() => updWith('predicates', (xs) => [...xs, { col: cols[0], op: 'eq', val: '' }])}>
              {(p, i) => <PredicateRow p={p} idx={i} kind="pred" cols={cols} onChange={(v) => updAt('predicates', i, v)} onRemove={() => delAt('predicates', i)} />}
            </Rows>
            <Rows label="Order by" testid="b-order" items={b.order_by}
              onAdd={() => updWith('order_by', (xs) => [...xs, { col: cols[0], dir: 'asc' }])}>
              {(o, i) => (
                <div class="row" data-testid={`order-${i}`}>
                  <select aria-label="order column" name="col" value={o.col} onChange={(e) => updAt('order_by', i, { ...o, col: e.target.value })}>
                    {[...cols, ...havingCols.filter((c) => !cols.includes(c))].map((c) => <option value={c}>{c}</option>)}
                  </select>
                  <select aria-label="direction" name="dir" value={o.dir} onChange={(e) => updAt('order_by', i, { ...o, dir: e.target.value })}>
                    <option value="asc">asc</option>
                    <option value="desc">desc</option>
                  </select>
                  <button type="button" class="small" aria-label="remove" onClick={() => delAt('order_by', i)}>×</button>
                </div>
              )}
            </Rows>
            <Multi label="Group by" options={cols} value={b.group_by} onChange={(v) => upd('group_by', v)} testid="b-group" />
            <Rows label="Aggregations" testid="b-aggs" items={b.aggregations}
              onAdd={() => updWith('aggregations', (xs) => [...xs, { op: 'count', col: '', alias: '' }])}>
              {(a, i) => (
                <div class="row wrap" data-testid={`agg-${i}`}>
                  <select aria-label="aggregate" name="op" value={a.op} onChange={(e) => updAt('aggregations', i, { ...a, op: e.target.value })}>
                    {AGGS.map((o) => <option value={o}>{o}</option>)}
                  </select>
                  <select aria-label="aggregate column" name="col" value={a.col} onChange={(e) => updAt('aggregations', i, { ...a, col: e.target.value })}>
                    <option value="">(rows)</option>
                    {cols.map((c) => <option value={c}>{c}</option>)}
                  </select>
                  <input aria-label="alias" name="alias" placeholder={aggAlias(a)} value={a.alias} onInput={(e) => updAt('aggregations', i, { ...a, alias: e.target.value })} />
                  <button type="button" class="small" aria-label="remove" onClick={() => delAt('aggregations', i)}>×</button>
                </div>
              )}
            </Rows>
            <Rows label="Having" testid="b-having" items={b.having}
              onAdd={() => updWith('having', (xs) => [...xs, { col: havingCols[0] || '', op: 'gt', val: '' }])}>
              {(p, i) => <PredicateRow p={p} idx={i} kind="having" cols={havingCols} onChange={(v) => updAt('having', i, v)} onRemove={() => delAt('having', i)} />}
            </Rows>
            <div class="row wrap">
              <label class="check"><input type="checkbox" name="distinct" checked={b.distinct} onChange={(e) => upd('distinct', e.target.checked)} /> distinct</label>
              <label>limit <input type="number" min="0" name="limit" value={b.limit} onInput={(e) => upd('limit', e.target.value)} class="num-in" /></label>
              <label>page <input type="number" min="1" name="page" value={edited ? (safePage(text) || b.page) : b.page} onInput={(e) => upd('page', e.target.value)} class="num-in" data-testid="page-input" /></label>
              <label>page size <input type="number" min="1" name="page_size" value={b.page_size} onInput={(e) => upd('page_size', e.target.value)} class="num-in" /></label>
            </div>
          </form>
          <div class="request">
            <label for="request-json">Request JSON {edited && <span class="muted">(edited)</span>}</label>
            <textarea id="request-json" data-testid="request-json" spellcheck={false} rows={14} value={text}
              onInput={(e) => setEditedText(e.target.value)} />
            <div class="row wrap">
              <button type="button" class="primary" onClick={() => run()} disabled={busy} data-testid="run-query">
                {busy ? 'Running…' : 'Run query'}
              </button>
              {busy && <button type="button" onClick={cancel} data-testid="cancel-query">Cancel</button>}
              <span class="muted">Ctrl+Enter</span>
              <fieldset class="toggle" aria-label="Result format">
                <label><input type="radio" name="fmt" value="json" checked={format === 'json'} onChange={() => setFormat('json')} /> JSON</label>
                <label><input type="radio" name="fmt" value="arrow" checked={format === 'arrow'} onChange={() => setFormat('arrow')} data-testid="format-arrow" /> Arrow</label>
              </fieldset>
              <code class="muted endpoint">POST {apiUrl(`/datasets/${selected}/query`)}</code>
            </div>
            <div class="row wrap copy-as">
              <span class="muted">Copy as</span>
              {['curl', 'python', 'js'].map((k) => (
                <button type="button" class="small" onClick={() => showCopy(k)} data-testid={`copy-${k}`}>{k === 'js' ? 'JavaScript' : k === 'python' ? 'Python' : 'curl'}</button>
              ))}
            </div>
            {copyAs && (
              <div class="snippet" data-testid="snippet">
                <div class="row"><b>{copyAs.kind}</b><span class="muted">(copied)</span><span class="spacer" />
                  <button type="button" class="link" aria-label="close" onClick={() => setCopyAs(null)}>×</button></div>
                <pre>{copyAs.text}</pre>
              </div>
            )}
          </div>
        </div>
      )}
      <Results result={result} onPage={(n) => run(n)} filename={`${selected}-page${result?.page || 1}`}
        onSort={sortBy} dataset={selected} schema={schema} onFacet={filterBy} onCountAll={countAll}
        extraDownloads={selected && (
          <>
            <button type="button" onClick={() => exportRows('csv')} data-testid="export-csv" title="Every matching row, streamed by the server">All rows: CSV</button>
            <button type="button" onClick={() => exportRows('ndjson')} data-testid="export-ndjson">NDJSON</button>
            <button type="button" onClick={downloadParquet} data-testid="download-parquet">Parquet (whole dataset)</button>
          </>
        )} />
    </div>
  );
}

function safePage(text) {
  try {
    return JSON.parse(text).page;
  } catch (_) {
    return null;
  }
}
