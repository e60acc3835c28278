// The Query tab: a builder for every field of the query request, the JSON it
// sends (shown and editable), and the results with paging, timing, the
// JSON/Arrow toggle, downloads and the chart.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { call, apiUrl } from './api.js';
import { ErrorBox, saveBlob } from './ui.jsx';
import { Results, columnsOf, decodeArrow } from './results.jsx';

export const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'between', 'is_null', 'is_not_null'];
const AGGS = ['count', 'sum', 'avg', 'min', 'max'];

const emptyBuilder = () => ({
  columns: [], predicates: [], order_by: [], group_by: [], aggregations: [], having: [],
  distinct: false, limit: '', page: 1, page_size: 100,
});

// A typed value from a text field, by the column's logical type.
function typed(text, logical) {
  const t = text.trim();
  if (['int', 'float', 'decimal'].includes(logical) && t !== '' && !Number.isNaN(Number(t))) return Number(t);
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

export function QueryTab({ datasets, selected, onSelect }) {
  const [schema, setSchema] = useState(null);
  const [b, setB] = useState(emptyBuilder());
  // The JSON box shows the builder's request until the user edits it; it is
  // derived while rendering, so a click right after a change sends that change.
  const [editedText, setEditedText] = useState(null);
  const [format, setFormat] = useState('json');
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    setSchema(null);
    setResult(null);
    setError(null);
    setB(emptyBuilder());
    setEditedText(null);
    if (!selected) return;
    call(`/datasets/${encodeURIComponent(selected)}/schema`).then((r) => setSchema(r.data), setError);
  }, [selected]);

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

  async function run(pageOverride) {
    setError(null);
    let req;
    try {
      req = JSON.parse(text);
    } catch (e) {
      setError({ message: `the request is not valid JSON: ${e.message}`, code: 'invalid_json' });
      return;
    }
    if (pageOverride) {
      req = { ...req, page: pageOverride };
      setEditedText(JSON.stringify(req, null, 2));
    }
    setBusy(true);
    try {
      const path = `/datasets/${encodeURIComponent(selected)}/query`;
      let res;
      if (format === 'arrow') {
        const r = await call(path, { json: req, query: { format: 'arrow' }, accept: 'arrow' });
        const t = await decodeArrow(r.data);
        res = { ...t, timing: r.timing, page: Number(r.headers.get('X-Page')) || 1, pageSize: Number(r.headers.get('X-Page-Size')) || 0 };
      } else {
        const r = await call(path, { json: req });
        res = { rows: r.data.data, columns: columnsOf(r.data.data), timing: r.timing, page: r.data.page, pageSize: r.data.page_size };
      }
      if (!res.columns.length && req.columns) res.columns = req.columns;
      setResult({ ...res, format, groupBy: req.group_by });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
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

  const onKey = (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
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
              <label>page <input type="number" min="1" name="page" value={b.page} onInput={(e) => upd('page', e.target.value)} class="num-in" /></label>
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
              <span class="muted">Ctrl+Enter</span>
              <fieldset class="toggle" aria-label="Result format">
                <label><input type="radio" name="fmt" value="json" checked={format === 'json'} onChange={() => setFormat('json')} /> JSON</label>
                <label><input type="radio" name="fmt" value="arrow" checked={format === 'arrow'} onChange={() => setFormat('arrow')} data-testid="format-arrow" /> Arrow</label>
              </fieldset>
              <code class="muted endpoint">POST {apiUrl(`/datasets/${selected}/query`)}</code>
            </div>
          </div>
        </div>
      )}
      <Results result={result} onPage={(n) => run(n)} filename={`${selected}-page${result?.page || 1}`}
        extraDownloads={selected && <button type="button" onClick={downloadParquet} data-testid="download-parquet">Parquet (whole dataset)</button>} />
    </div>
  );
}
