// The SQL tab (when [sql] enabled): one read-only SELECT over the datasets in
// a CodeMirror editor (completion of datasets, columns and functions), the
// statement in the URL (#/sql?sql=...), a history kept in this browser,
// errors pointing at their position, results as JSON or Arrow, and "save as
// dataset" through POST /queries?async=true with its build progress polled.
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, getSettings } from './api.js';
import { ErrorBox, StateBadge, fmtInt } from './ui.jsx';
import { Results, columnsOf, decodeArrow } from './results.jsx';
import { hashOf, pushRoute } from './route.js';

const HISTORY_KEY = 'vitrine.sql.history';
const HISTORY_MAX = 50;

function loadHistory() {
  try {
    const h = JSON.parse(localStorage.getItem(HISTORY_KEY) || '[]');
    return Array.isArray(h) ? h.filter((x) => typeof x === 'string') : [];
  } catch (_) {
    return [];
  }
}

function remember(sql) {
  const h = [sql, ...loadHistory().filter((x) => x !== sql)].slice(0, HISTORY_MAX);
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(h));
  } catch (_) { /* full or disabled: no history */ }
  return h;
}

// Where an error points: DuckDB's "LINE n: <text>" and the caret under it,
// or the gate's 'at or near "x"'. {line, column, length} (1-based) or null.
// A column for completion. CodeMirror quotes a name that is not a plain
// identifier but does not double the quotes inside it: it completed
// `it's "quoted"` as "it's "quoted"", which does not parse. Such a name
// gets its quoted form here, "" for each ".
function completionOf(name) {
  return name.includes('"')
    ? { label: name, type: 'property', apply: `"${name.replace(/"/g, '""')}"` }
    : name;
}

export function errorPosition(message, sql) {
  const m = /LINE (\d+): (.*)\n( *)\^/.exec(message || '');
  if (m) {
    const line = Number(m[1]);
    const shown = m[2];
    const caret = m[3].length - `LINE ${m[1]}: `.length;
    const text = sql.split('\n')[line - 1] || '';
    // DuckDB may cut a long line: find the shown text in the real one.
    const at = text.indexOf(shown.replace(/^\.\.\./, '').replace(/\.\.\.$/, '').slice(0, 20));
    const column = (at > 0 && shown.startsWith('...') ? at - 3 : 0) + caret + 1;
    const word = /^[\w."]+/.exec(text.slice(column - 1));
    return { line, column, length: word ? word[0].length : 1 };
  }
  const n = /at or near "([^"]+)"/.exec(message || '');
  if (n) {
    const idx = sql.indexOf(n[1]);
    if (idx >= 0) {
      const before = sql.slice(0, idx).split('\n');
      return { line: before.length, column: before[before.length - 1].length + 1, length: n[1].length };
    }
  }
  return null;
}

export function SqlTab({ datasets, params = {}, queriesAvailable, onChanged }) {
  const first = datasets[0]?.name;
  const [sql, setSql] = useState(params.sql || (first ? `SELECT * FROM "${first}" LIMIT 100` : 'SELECT 1 AS one'));
  const [maxRows, setMaxRows] = useState(1000);
  const [format, setFormat] = useState('json');
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [where, setWhere] = useState(null);
  const [busy, setBusy] = useState(false);
  const [hist, setHist] = useState(loadHistory());
  const box = useRef(null);
  const editor = useRef(null);
  const sqlRef = useRef(sql);
  const runRef = useRef(null);
  const ran = useRef(null);

  // The editor, with the datasets' columns for completion.
  useEffect(() => {
    if (!getSettings().sql || !box.current) return undefined;
    let dead = false;
    (async () => {
      const published = datasets.filter((d) => d.state === 'published').slice(0, 50);
      const schema = {};
      await Promise.all(published.map((d) => call(`/datasets/${encodeURIComponent(d.name)}/schema`)
        .then((r) => { schema[d.name] = r.data.columns.map((c) => completionOf(c.name)); },
          () => { schema[d.name] = []; })));
      const { createEditor } = await import('./editor.js');
      if (dead || !box.current) return;
      if (editor.current) editor.current.destroy();
      editor.current = createEditor(box.current, {
        doc: sqlRef.current, schema, label: 'SQL (one read-only SELECT; datasets are tables)',
        onRun: () => runRef.current && runRef.current(),
        onChange: (t) => { sqlRef.current = t; setSql(t); },
      });
    })();
    return () => {
      dead = true;
    };
  }, [datasets.map((d) => `${d.name}:${d.state}`).join(',')]);
  useEffect(() => () => editor.current && editor.current.destroy(), []);

  // #/sql?sql=...: a shared statement runs when opened.
  useEffect(() => {
    if (!params.sql || params.sql === ran.current) return;
    sqlRef.current = params.sql;
    setSql(params.sql);
    if (editor.current) editor.current.set(params.sql);
    ran.current = params.sql;
    run(params.sql, false);
  }, [params.sql]);

  if (!getSettings().sql)
    return (
      <div class="banner" role="status" data-testid="sql-disabled">
        SQL is not enabled on this server. An operator turns it on with <code>[sql] enabled = true</code> in
        the configuration file; structured queries work on the Query tab meanwhile.
      </div>
    );

  async function run(given, push = true) {
    const text = given || sqlRef.current;
    setError(null);
    setWhere(null);
    setBusy(true);
    setHist(remember(text));
    if (push) {
      ran.current = text;
      const h = hashOf('sql', null, { sql: text });
      if (location.hash !== h) pushRoute(h);
    }
    try {
      const body = { sql: text, max_rows: Number(maxRows) || undefined };
      if (format === 'arrow') {
        const r = await call('/sql', { json: body, query: { format: 'arrow' }, accept: 'arrow' });
        setResult({ ...(await decodeArrow(r.data)), timing: r.timing, format });
      } else {
        const r = await call('/sql', { json: body });
        setResult({ rows: r.data.data, columns: columnsOf(r.data.data), timing: r.timing, format, truncated: r.data.truncated });
      }
    } catch (e) {
      setResult(null);
      const pos = errorPosition(e.message, text);
      // The position is shown (and selected in the editor): DuckDB's copy of
      // the line with a caret under it is left out of the message.
      setError(pos ? { message: e.message.split('\nLINE ')[0].trim(), code: e.code, status: e.status } : e);
      setWhere(pos);
      if (pos && editor.current) editor.current.mark(pos.line, pos.column, pos.length);
    } finally {
      setBusy(false);
    }
  }
  runRef.current = run;

  return (
    <div class="sql" onKeyDown={(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } }}>
      <label id="sql-label">SQL (one read-only SELECT; datasets are tables)</label>
      <div class="editor" ref={box} aria-labelledby="sql-label" />
      <div class="row wrap">
        <button type="button" class="primary" onClick={() => run()} disabled={busy} data-testid="run-sql">{busy ? 'Running…' : 'Run SQL'}</button>
        <span class="muted">Ctrl+Enter · Ctrl+Space completes</span>
        <label>max rows <input type="number" min="1" class="num-in" value={maxRows} onInput={(e) => setMaxRows(e.target.value)} /></label>
        <fieldset class="toggle" aria-label="Result format">
          <label><input type="radio" name="sqlfmt" checked={format === 'json'} onChange={() => setFormat('json')} /> JSON</label>
          <label><input type="radio" name="sqlfmt" checked={format === 'arrow'} onChange={() => setFormat('arrow')} /> Arrow</label>
        </fieldset>
        {hist.length > 0 && (
          <label>history <select data-testid="sql-history" value="" onChange={(e) => {
            const t = e.target.value;
            if (!t) return;
            sqlRef.current = t;
            setSql(t);
            if (editor.current) editor.current.set(t);
          }}>
            <option value="">{hist.length} recent…</option>
            {hist.map((h) => <option value={h}>{h.length > 80 ? `${h.slice(0, 80)}…` : h}</option>)}
          </select></label>
        )}
      </div>
      <ErrorBox error={error} onClose={() => { setError(null); setWhere(null); }} />
      {where && <p class="error-where" data-testid="error-position">at line {where.line}, column {where.column}</p>}
      <Results result={result} filename="sql-result" />
      {queriesAvailable && <SaveAsDataset sql={sql} onChanged={onChanged} />}
    </div>
  );
}

function SaveAsDataset({ sql, onChanged }) {
  const [f, setF] = useState({ name: '', kind: 'temp', ttl: '', interval: '', on_upstream_reload: false, residency: 'auto', sort_by: '' });
  const [error, setError] = useState(null);
  const [progress, setProgress] = useState(null); // {name, state, started, status}
  const timer = useRef(null);
  const set = (k, v) => setF({ ...f, [k]: v });

  useEffect(() => () => clearTimeout(timer.current), []);

  function body() {
    const b = { name: f.name.trim(), sql, kind: f.kind };
    if (f.kind === 'temp' && f.ttl.trim()) b.ttl = f.ttl.trim();
    if (f.interval.trim() || f.on_upstream_reload) {
      b.refresh = {};
      if (f.interval.trim()) b.refresh.interval = f.interval.trim();
      if (f.on_upstream_reload) b.refresh.on_upstream_reload = true;
    }
    const sortBy = f.sort_by.split(',').map((s) => s.trim()).filter(Boolean);
    if (f.residency !== 'auto' || sortBy.length) {
      b.materialize = { residency: f.residency };
      if (sortBy.length) b.materialize.sort_by = sortBy;
    }
    return b;
  }

  async function poll(name, started) {
    try {
      const r = await call(`/datasets/${encodeURIComponent(name)}/status`);
      setProgress({ name, state: r.data.state, started, status: r.data });
      onChanged();
      if (r.data.state === 'building' || r.data.state === 'pending')
        timer.current = setTimeout(() => poll(name, started), 500);
    } catch (e) {
      setError(e);
    }
  }

  async function save(e) {
    e.preventDefault();
    setError(null);
    setProgress(null);
    const b = body();
    try {
      const started = performance.now();
      const r = await call('/queries', { json: b, query: { async: 'true' } });
      setProgress({ name: b.name, state: r.data.state, started });
      onChanged();
      poll(b.name, started);
    } catch (err) {
      setError(err);
    }
  }

  return (
    <form class="save card" onSubmit={save} aria-label="Save as dataset" data-testid="save-form">
      <h3>Save as dataset</h3>
      <div class="row wrap">
        <label>name <input name="name" required pattern="[A-Za-z0-9_.\-]+" value={f.name} onInput={(e) => set('name', e.target.value)} /></label>
        <label>kind <select name="kind" value={f.kind} onChange={(e) => set('kind', e.target.value)}>
          <option value="temp">temp (memory, lost on restart)</option>
          <option value="query">query (persisted)</option>
        </select></label>
        {f.kind === 'temp' && <label>ttl <input name="ttl" placeholder="e.g. 1h" value={f.ttl} onInput={(e) => set('ttl', e.target.value)} class="short" /></label>}
        <label>refresh every <input name="interval" placeholder="e.g. 10m" value={f.interval} onInput={(e) => set('interval', e.target.value)} class="short" /></label>
        <label class="check"><input type="checkbox" name="on_upstream_reload" checked={f.on_upstream_reload} onChange={(e) => set('on_upstream_reload', e.target.checked)} /> refresh when an upstream reloads</label>
        <label>residency <select name="residency" value={f.residency} onChange={(e) => set('residency', e.target.value)}>
          <option value="auto">auto</option><option value="memory">memory</option><option value="lazy">lazy</option>
        </select></label>
        <label>sort by <input name="sort_by" placeholder="col1, col2" value={f.sort_by} onInput={(e) => set('sort_by', e.target.value)} /></label>
        <button type="submit" class="primary" data-testid="save-dataset">Save</button>
      </div>
      <ErrorBox error={error} onClose={() => setError(null)} />
      {progress && (
        <p class="notice" role="status" data-testid="save-progress">
          {progress.name}: <StateBadge state={progress.state} />
          {progress.status?.state === 'published' && <> {fmtInt(progress.status.rows)} rows</>}
          {progress.status?.last_error && <span class="last-error"> {progress.status.last_error}</span>}
          <span class="muted"> {((performance.now() - progress.started) / 1000).toFixed(1)} s</span>
        </p>
      )}
    </form>
  );
}
