// The Register tab: a dataset configuration built from a form (shown and
// editable as JSON), registered in memory (POST /datasets) or appended to
// the config file (POST /datasets/persist).
import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import { ErrorBox, fmtInt } from './ui.jsx';

function configOf(f) {
  const c = { name: f.name.trim(), source: { kind: f.kind, location: f.location.trim() } };
  const cols = f.columns.split(',').map((s) => s.trim()).filter(Boolean);
  if (cols.length) c.columns = cols;
  if (f.lazy) c.lazy = true;
  if (f.index !== 'auto') c.index = { mode: f.index };
  return c;
}

export function RegisterTab({ onChanged }) {
  const [f, setF] = useState({ name: '', kind: 'parquet', location: '', columns: '', lazy: false, index: 'auto' });
  const [text, setText] = useState('');
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (k, v) => setF({ ...f, [k]: v });

  useEffect(() => setText(JSON.stringify(configOf(f), null, 2)), [f]);

  async function send(persist) {
    setError(null);
    setNotice(null);
    let body;
    try {
      body = JSON.parse(text);
    } catch (e) {
      setError({ message: `the configuration is not valid JSON: ${e.message}`, code: 'invalid_json' });
      return;
    }
    setBusy(true);
    try {
      if (persist) {
        const r = await call('/datasets/persist', { json: body });
        setNotice(`Persisted ${body.name} to ${r.data.path}`);
      } else {
        const r = await call('/datasets', { json: body });
        setNotice(`Registered ${r.data.name}: ${fmtInt(r.data.rows)} rows, ${r.data.columns} columns`);
      }
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
    onChanged();
  }

  return (
    <div class="register">
      <form class="card" onSubmit={(e) => { e.preventDefault(); send(false); }} aria-label="Register a dataset">
        <div class="row wrap">
          <label>name <input name="name" required value={f.name} onInput={(e) => set('name', e.target.value)} data-testid="reg-name" /></label>
          <label>source kind <select name="kind" value={f.kind} onChange={(e) => set('kind', e.target.value)}>
            <option value="parquet">parquet</option><option value="delta">delta</option>
          </select></label>
          <label class="grow">location <input name="location" required placeholder="/data/trips/*.parquet or s3://bucket/prefix/" value={f.location}
            onInput={(e) => set('location', e.target.value)} data-testid="reg-location" /></label>
        </div>
        <div class="row wrap">
          <label class="grow">columns <input name="columns" placeholder="all (or col1, col2)" value={f.columns} onInput={(e) => set('columns', e.target.value)} /></label>
          <label class="check"><input type="checkbox" name="lazy" checked={f.lazy} onChange={(e) => set('lazy', e.target.checked)} /> lazy (served from storage)</label>
          <label>index <select name="index" value={f.index} onChange={(e) => set('index', e.target.value)}>
            <option value="auto">auto</option><option value="none">none</option>
          </select></label>
        </div>
        <label for="reg-json">Dataset configuration (JSON, editable)</label>
        <textarea id="reg-json" rows={8} spellcheck={false} value={text} onInput={(e) => setText(e.target.value)} data-testid="reg-json" />
        <div class="row wrap">
          <button type="submit" class="primary" disabled={busy} data-testid="register">Register</button>
          <button type="button" disabled={busy} onClick={() => send(true)} data-testid="persist">Persist to config file</button>
          <span class="muted">Register loads it now (in memory); persist appends a [[dataset]] block to the config file.</span>
        </div>
      </form>
      <ErrorBox error={error} onClose={() => setError(null)} />
      {notice && <p class="notice" role="status" data-testid="notice">{notice}</p>}
    </div>
  );
}
