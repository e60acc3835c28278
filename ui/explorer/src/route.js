// Routes: the whole state of a tab lives in the URL's hash, #/tab/name?k=v
// (share, reload, back and forward work); decoding never throws.
const TAB_IDS = ['datasets', 'query', 'sql', 'register'];

// A URL-component decoded, or as it is when malformed ("%E0%A4%A" must not
// blank the page).
export function decode(s) {
  try {
    return decodeURIComponent(s);
  } catch (_) {
    return s;
  }
}

// #/tab/name?key=value...: the whole state of a tab lives in the URL (share,
// reload, back and forward).
export function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const qi = raw.indexOf('?');
  const path = qi < 0 ? raw : raw.slice(0, qi);
  const params = {};
  if (qi >= 0)
    for (const kv of raw.slice(qi + 1).split('&')) {
      if (!kv) continue;
      const eq = kv.indexOf('=');
      params[decode(eq < 0 ? kv : kv.slice(0, eq))] = eq < 0 ? '' : decode(kv.slice(eq + 1).replace(/\+/g, ' '));
    }
  const parts = path.split('/').map(decode);
  const tab = TAB_IDS.includes(parts[0]) ? parts[0] : 'datasets';
  return { tab, name: parts[1] || null, params };
}

// The URL of a tab's state (params: key -> string; empty ones left out).
export function hashOf(tab, name, params = {}) {
  const q = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  return `#/${tab}${name ? `/${encodeURIComponent(name)}` : ''}${q ? `?${q}` : ''}`;
}


// A new history entry for a tab's state (a query that ran): the app hears of
// it as it does of back and forward (popstate), so its route stays the URL.
export function pushRoute(hash) {
  history.pushState(null, '', hash);
  dispatchEvent(new PopStateEvent('popstate'));
}
