// The Explorer: a single-page app served from the binary at explorer.path.
// It reads ./config.json (API prefix, environment badge, optional
// features, [explorer.oauth2] for sign-in); tabs are
// hash routes (#/datasets/NAME, #/query/NAME, #/sql, #/register) so every
// view has a URL without server-side routing.
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import './style.css';
import { call, checkAdminToken, configure, setAdminToken, hasAdminToken, setBearerToken, hasBearerToken, bearerMayManage } from './api.js';
import { completeSignIn, signIn } from './auth.js';
import { DatasetList } from './datasets.jsx';
import { QueryTab } from './query.jsx';
import { SqlTab } from './sql.jsx';
import { RegisterTab } from './register.jsx';
import { ErrorBox } from './ui.jsx';
import { parseHash } from './route.js';

export const TABS = [
  { id: 'datasets', label: 'Datasets' },
  { id: 'query', label: 'Query' },
  { id: 'sql', label: 'SQL' },
  { id: 'register', label: 'Register' },
];
const COLORS = ['primary', 'secondary', 'success', 'info', 'warning', 'danger', 'light', 'dark'];

function EnvBadge({ settings }) {
  if (!settings.environment) return null;
  const color = COLORS.includes(settings.environment_color) ? settings.environment_color : 'secondary';
  return <span class={`env env-${color}`} data-testid="env-badge" title="server.environment">{settings.environment}</span>;
}

function TokenBox({ onChange }) {
  const [value, setValue] = useState('');
  const [set, setSet] = useState(hasAdminToken());
  const [problem, setProblem] = useState(null);
  const [checking, setChecking] = useState(false);
  if (set)
    return (
      <div class="token row">
        <span class="muted" data-testid="token-state">admin token set</span>
        <button type="button" class="small" onClick={() => { setAdminToken(''); setSet(false); onChange(); }}>Forget</button>
      </div>
    );
  return (
    <form class="token row" onSubmit={async (e) => {
      e.preventDefault();
      // Checked when entered: a wrong token is said at once, not at the
      // first admin action.
      setChecking(true);
      const r = await checkAdminToken(value);
      setChecking(false);
      if (!r.ok) {
        setProblem(r.message);
        return;
      }
      setProblem(null);
      setAdminToken(value);
      setValue('');
      setSet(true);
      onChange();
    }} aria-label="Admin token" autocomplete="off">
      <input type="password" name="admin-token" placeholder="admin token" value={value} autocomplete="off"
        onInput={(e) => { setValue(e.target.value); setProblem(null); }} aria-label="Admin token" data-testid="admin-token"
        aria-invalid={problem ? 'true' : 'false'} />
      <button type="submit" class="small" data-testid="admin-token-set" disabled={checking || !value}>{checking ? 'Checking…' : 'Use'}</button>
      {problem && <span class="token-problem" role="alert" data-testid="token-problem">{problem}</span>}
    </form>
  );
}

const SHORTCUTS = [
  ['Ctrl+Enter', 'Run the query or the SQL'],
  ['Esc', 'Cancel a running query; close a panel'],
  ['g d / g q / g s / g r', 'Go to Datasets, Query, SQL, Register'],
  ['/', 'Focus the dataset chooser or the SQL editor'],
  ['← →', 'Previous, next page of results'],
  ['Ctrl+Space', 'Complete a name in the SQL editor'],
  ['?', 'This help'],
];

function HelpPanel({ open, onClose }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    // Escape lets the browser close the dialog at once (no preventDefault):
    // the page behind stays inert only while the dialog is really open, not
    // until the next render catches up.
    <dialog ref={ref} class="help" onClose={() => { if (open) onClose(); }} aria-labelledby="help-title" data-testid="help">
      <h2 id="help-title">Keyboard shortcuts</h2>
      <table class="keys">
        <tbody>{SHORTCUTS.map(([k, what]) => <tr><th scope="row"><kbd>{k}</kbd></th><td>{what}</td></tr>)}</tbody>
      </table>
      <div class="row end"><button type="button" autofocus onClick={onClose}>Close</button></div>
    </dialog>
  );
}

// Keys that work anywhere but in a text field.
function useShortcuts(onHelp) {
  useEffect(() => {
    let g = false;
    const typing = (t) => t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
    const f = (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      if (e.key === '?') {
        e.preventDefault();
        onHelp();
      } else if (g) {
        g = false;
        const tab = { d: 'datasets', q: 'query', s: 'sql', r: 'register' }[e.key];
        if (tab) location.hash = `#/${tab}`;
      } else if (e.key === 'g') {
        g = true;
        setTimeout(() => { g = false; }, 1500);
      } else if (e.key === '/') {
        const el = document.querySelector('[data-testid=query-dataset], .cm-content');
        if (el) {
          e.preventDefault();
          el.focus();
        }
      }
    };
    addEventListener('keydown', f);
    return () => removeEventListener('keydown', f);
  }, [onHelp]);
}

function Tabs({ tab, name }) {
  const refs = useRef({});
  const go = (id) => {
    location.hash = `#/${id}${name && (id === 'query' || id === 'datasets') ? `/${encodeURIComponent(name)}` : ''}`;
  };
  const onKey = (e) => {
    // From the tab the key was pressed on: after a first arrow the focus has
    // moved but `tab` still names the old one until the hash change renders
    // (a second arrow pressed before that moved from the old tab).
    let i = TABS.findIndex((t) => refs.current[t.id] === e.target);
    if (i < 0) i = TABS.findIndex((t) => t.id === tab);
    let j = -1;
    if (e.key === 'ArrowRight') j = (i + 1) % TABS.length;
    if (e.key === 'ArrowLeft') j = (i + TABS.length - 1) % TABS.length;
    if (e.key === 'Home') j = 0;
    if (e.key === 'End') j = TABS.length - 1;
    if (j >= 0) {
      e.preventDefault();
      go(TABS[j].id);
      refs.current[TABS[j].id]?.focus();
    }
  };
  return (
    <nav class="tabs" role="tablist" aria-label="Explorer" onKeyDown={onKey}>
      {TABS.map((t) => (
        <button type="button" role="tab" id={`tab-${t.id}`} aria-selected={t.id === tab} aria-controls="panel"
          tabindex={t.id === tab ? 0 : -1} ref={(el) => (refs.current[t.id] = el)} onClick={() => go(t.id)}
          data-testid={`tab-${t.id}`}>
          {t.label}
        </button>
      ))}
    </nav>
  );
}

function App({ settings, oauth2, signInError }) {
  const [route, setRoute] = useState(parseHash());
  const [datasets, setDatasets] = useState([]);
  const [error, setError] = useState(signInError);
  const [queriesAvailable, setQueriesAvailable] = useState(false);
  const [runtime, setRuntime] = useState([]);
  const [signedIn, setSignedIn] = useState(hasBearerToken());
  const [help, setHelp] = useState(false);
  const poll = useRef(null);
  const openHelp = useCallback(() => setHelp(true), []);
  useShortcuts(openHelp);

  useEffect(() => {
    // hashchange for links and typed URLs; popstate for back and forward
    // over the entries the tabs push (pushState fires no hashchange).
    const f = () => setRoute(parseHash());
    addEventListener('hashchange', f);
    addEventListener('popstate', f);
    return () => {
      removeEventListener('hashchange', f);
      removeEventListener('popstate', f);
    };
  }, []);

  const refresh = useCallback(async () => {
    clearTimeout(poll.current);
    let list = [];
    try {
      const r = await call('/datasets');
      list = r.data;
      setDatasets(list);
      setError(null);
    } catch (e) {
      setError(e);
    }
    // The /queries routes answer 404 when the server hides them: no save or
    // delete controls then. They always need credentials (the admin token,
    // or a bearer token granted datasets:manage), so without them the
    // controls stay hidden and the page does not ask.
    if (!hasAdminToken() && !bearerMayManage()) {
      setQueriesAvailable(false);
      setRuntime([]);
    } else {
      try {
        const r = await call('/queries');
        setQueriesAvailable(true);
        setRuntime((r.data || []).map((q) => q.name));
      } catch (e) {
        setQueriesAvailable(e.status !== 404);
        setRuntime([]);
      }
    }
    // Poll while anything builds, so state badges move on their own.
    if (list.some((d) => d.state === 'building' || d.state === 'pending'))
      poll.current = setTimeout(refresh, 1000);
  }, []);

  useEffect(() => {
    refresh();
    return () => clearTimeout(poll.current);
  }, [refresh]);

  const select = (tab) => (n) => { location.hash = n ? `#/${tab}/${encodeURIComponent(n)}` : `#/${tab}`; };

  return (
    <>
      <a class="skip" href="#panel">Skip to content</a>
      <header class="top">
        <h1>vitrine <span class="muted">Explorer</span></h1>
        <EnvBadge settings={settings} />
        <span class="spacer" />
        {settings.docs && <a href={`${settings.prefix}${settings.docs}/`} class="small">Docs</a>}
        <TokenBox onChange={refresh} />
        {oauth2 && (signedIn
          ? <button type="button" class="small" onClick={() => { setBearerToken(''); setSignedIn(false); refresh(); }} data-testid="sign-out">Sign out</button>
          : <button type="button" class="small primary" onClick={() => signIn(oauth2).catch((e) => setError({ message: e.message, code: 'sign_in_failed' }))} data-testid="sign-in">Sign in</button>)}
        {signedIn && <span class="muted" data-testid="signed-in">signed in</span>}
        <button type="button" class="small icon" onClick={openHelp} aria-label="Keyboard shortcuts" title="Keyboard shortcuts (?)" data-testid="help-open">?</button>
      </header>
      <HelpPanel open={help} onClose={() => setHelp(false)} />
      <Tabs tab={route.tab} name={route.name} />
      <main id="panel" role="tabpanel" aria-labelledby={`tab-${route.tab}`} tabindex="-1">
        <ErrorBox error={error} onClose={() => setError(null)} />
        {route.tab === 'datasets' && (
          <DatasetList datasets={datasets} selected={route.name} params={route.params} onSelect={select('datasets')} runtime={runtime}
            queriesAvailable={queriesAvailable} onChanged={refresh} onQuery={select('query')} />
        )}
        {route.tab === 'query' && <QueryTab datasets={datasets} selected={route.name} params={route.params} onSelect={select('query')} />}
        {route.tab === 'sql' && <SqlTab datasets={datasets} params={route.params} queriesAvailable={queriesAvailable} onChanged={refresh} />}
        {route.tab === 'register' && <RegisterTab onChanged={refresh} />}
      </main>
    </>
  );
}

async function start() {
  const root = document.getElementById('app');
  let settings;
  try {
    const r = await fetch('./config.json', { cache: 'no-store' });
    settings = await r.json();
  } catch (e) {
    root.textContent = `Cannot load the Explorer settings: ${e.message}`;
    return;
  }
  configure(settings);
  const oauth2 = settings.oauth2 || null;
  let signInError = null;
  if (oauth2) {
    try {
      const signedIn = await completeSignIn(oauth2);
      if (signedIn) setBearerToken(signedIn.token, signedIn.scopes);
    } catch (e) {
      signInError = { message: e.message, code: 'sign_in_failed' };
    }
  }
  render(<App settings={settings} oauth2={oauth2} signInError={signInError} />, root);
}

start();
