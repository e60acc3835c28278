// Drives the Explorer and the docs site in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core) for tests/e2e/test_explorer.py.
//
//   node drive.mjs SCENARIO JSON_ARGS      one scenario
//   node drive.mjs --serve                 scenarios read from stdin, one per line
//
// Prints one JSON object per scenario: what the page showed (table cells,
// notices, errors), every request the page sent (method, URL, headers, body),
// console errors, page errors, and storage contents. The Python side checks those
// against the server's own answers and state. Screenshots go to args.shots.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const LAUNCH = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
};
// Each scenario runs in a fresh context (its own cookies, storage, cache and
// downloads): nothing one scenario leaves is seen by the next, whether the
// browser was started for it alone or serves a whole test module.
const CONTEXT = { viewport: { width: 1280, height: 900 }, acceptDownloads: true };

// The scenario being run: its arguments and what it reports.
let args = {};
let out = null;

function watch(page, o) {
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning')
      o.console.push({ type: m.type(), text: m.text(), url: m.location().url || '' });
  });
  page.on('pageerror', (e) => o.pageErrors.push(String(e && e.message)));
  page.on('request', (r) => o.requests.push({
    method: r.method(), url: r.url(), headers: r.headers(), body: r.postData() || null,
  }));
}

async function shot(page, name, opts = {}) {
  if (!args.shots) return;
  fs.mkdirSync(args.shots, { recursive: true });
  await page.screenshot({ path: path.join(args.shots, `${name}.png`), fullPage: true, ...opts });
}

async function storage(page) {
  return page.evaluate(() => ({
    local: JSON.stringify({ ...localStorage }),
    session: JSON.stringify({ ...sessionStorage }),
    cookies: document.cookie,
  }));
}

async function tableCells(page, sel = '[data-testid=results]') {
  return page.$$eval(`${sel} tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
}

async function open(page, hash) {
  await page.goto(`${args.url}${hash || ''}`);
  await page.waitForSelector('[data-testid=dataset-list], [data-testid=tab-query]');
}

async function setToken(page, token) {
  await page.fill('[data-testid=admin-token]', token);
  await page.click('[data-testid=admin-token-set]');
  await page.waitForSelector('[data-testid=token-state]');
}

async function waitNotice(page) {
  await page.waitForSelector('[data-testid=notice], [data-testid=error]');
  const notice = await page.$eval('[data-testid=notice]', (e) => e.textContent).catch(() => null);
  const error = await page.$eval('[data-testid=error]', (e) => e.textContent).catch(() => null);
  return { notice, error };
}

async function build(page, b) {
  // b: {columns, predicates:[{col,op,val,val2}], order:[{col,dir}], group, aggs:[{op,col,alias}], having, page_size, limit, distinct}
  for (const c of b.columns || []) await page.check(`[data-testid=b-columns] input[value="${c}"]`);
  for (const [i, p] of (b.predicates || []).entries()) {
    await page.click('[data-testid=b-predicates] > button');
    await page.selectOption(`[data-testid=pred-${i}] select[name=col]`, p.col);
    await page.selectOption(`[data-testid=pred-${i}] select[name=op]`, p.op);
    if (p.val !== undefined) await page.fill(`[data-testid=pred-${i}] input[name=val]`, String(p.val));
    if (p.val2 !== undefined) await page.fill(`[data-testid=pred-${i}] input[name=val2]`, String(p.val2));
  }
  for (const [i, o] of (b.order || []).entries()) {
    await page.click('[data-testid=b-order] > button');
    await page.selectOption(`[data-testid=order-${i}] select[name=col]`, o.col);
    await page.selectOption(`[data-testid=order-${i}] select[name=dir]`, o.dir);
  }
  for (const c of b.group || []) await page.check(`[data-testid=b-group] input[value="${c}"]`);
  for (const [i, a] of (b.aggs || []).entries()) {
    await page.click('[data-testid=b-aggs] > button');
    await page.selectOption(`[data-testid=agg-${i}] select[name=op]`, a.op);
    await page.selectOption(`[data-testid=agg-${i}] select[name=col]`, a.col || '');
    if (a.alias) await page.fill(`[data-testid=agg-${i}] input[name=alias]`, a.alias);
  }
  for (const [i, p] of (b.having || []).entries()) {
    await page.click('[data-testid=b-having] > button');
    await page.selectOption(`[data-testid=having-${i}] select[name=col]`, p.col);
    await page.selectOption(`[data-testid=having-${i}] select[name=op]`, p.op);
    if (p.val !== undefined) await page.fill(`[data-testid=having-${i}] input[name=val]`, String(p.val));
  }
  if (b.distinct) await page.check('input[name=distinct]');
  if (b.limit !== undefined) await page.fill('input[name=limit]', String(b.limit));
  if (b.page_size !== undefined) await page.fill('input[name=page_size]', String(b.page_size));
  // The JSON box shows what Run sends: wait until it has the last edit.
  if (b.page_size !== undefined)
    await page.waitForFunction((n) => {
      try {
        return JSON.parse(document.querySelector('[data-testid=request-json]').value).page_size === n;
      } catch (_) {
        return false;
      }
    }, b.page_size);
}

async function runQuery(page) {
  const before = out.requests.length;
  await page.click('[data-testid=run-query]');
  await page.waitForFunction((n) => document.querySelector('[data-testid=run-query]')?.textContent === 'Run query', before);
  await page.waitForSelector('[data-testid=results], [data-testid=no-rows], [data-testid=error]');
  const sent = out.requests.slice(before).filter((r) => r.url.includes('/query'));
  return sent[sent.length - 1];
}

const scenarios = {
  // Every tab, keyboard navigation between tabs, a phone-width rendering.
  async tabs(page) {
    out.tabs = {};
    for (const [name, hash, sel] of [
      ['datasets', '#/datasets', '[data-testid=dataset-list] tbody tr'],
      ['dataset-detail', `#/datasets/${args.dataset}`, '[data-testid=schema]'],
      ['query', `#/query/${args.dataset}`, '[data-testid=request-json]'],
      ['sql', '#/sql', '[data-testid=sql-text], [data-testid=sql-disabled]'],
      ['register', '#/register', '[data-testid=reg-json]'],
    ]) {
      await page.goto(`${args.url}${hash}`);
      await page.waitForSelector(sel);
      await page.waitForLoadState('networkidle');
      out.tabs[name] = await page.$eval('main', (m) => m.innerText.slice(0, 4000));
      await shot(page, `explorer-${name}`);
    }
    // keyboard: focus the selected tab, arrows move between tabs
    await page.focus('[data-testid=tab-register]');
    await page.keyboard.press('ArrowRight');
    out.afterRight = await page.evaluate(() => location.hash);
    await page.keyboard.press('ArrowLeft');
    out.afterLeft = await page.evaluate(() => location.hash);
    out.focused = await page.evaluate(() => document.activeElement?.dataset.testid);
    // two arrows faster than a render (a held key, a busy page): each moves
    // on from the tab it was pressed on
    await page.focus('[data-testid=tab-register]');
    out.fastArrows = await page.evaluate(() => {
      for (let k = 0; k < 2; k++)
        document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
      return [location.hash, document.activeElement?.dataset.testid];
    });
    // Tab from the page start reaches the skip link, then the controls
    await page.goto('about:blank');
    await page.goto(`${args.url}#/datasets`);
    await page.waitForSelector('[data-testid=dataset-list] tbody tr');
    await page.keyboard.press('Tab');
    out.firstTab = await page.evaluate(() => document.activeElement?.textContent);
    // phone width
    await page.goto('about:blank');
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [name, hash, sel] of [['datasets', '#/datasets', '[data-testid=dataset-list] tbody tr'],
      ['query', `#/query/${args.dataset}`, '[data-testid=request-json]']]) {
      await page.goto(`${args.url}${hash}`);
      await page.waitForSelector(sel);
      await page.waitForLoadState('networkidle');
      out[`phone_${name}_overflow`] = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      await shot(page, `explorer-phone-${name}`);
    }
  },

  // The builder's request and table, the edited JSON, paging, Arrow, errors.
  async builder(page) {
    await open(page, `#/query/${args.dataset}`);
    await page.waitForSelector('[data-testid=request-json]');
    await build(page, args.build);
    out.requestText = await page.inputValue('[data-testid=request-json]');
    const sent = await runQuery(page);
    out.sentBody = sent.body;
    out.page1 = await tableCells(page);
    out.timing = await page.$eval('[data-testid=timing]', (e) => e.textContent);
    await shot(page, 'explorer-query-results');
    const before = out.requests.length;
    await page.click('[data-testid=next-page]');
    await page.waitForFunction(() => document.querySelector('[data-testid=page]')?.textContent === 'page 2');
    out.page2Body = out.requests.slice(before).find((r) => r.url.includes('/query'))?.body;
    out.page2 = await tableCells(page);
    // Arrow: same request, decoded in the page
    await page.check('[data-testid=format-arrow]');
    const arrowReq = await runQuery(page);
    out.arrowUrl = arrowReq.url;
    out.arrowAccept = arrowReq.headers.accept;
    out.arrowPage = await tableCells(page);
    // A bad request typed into the JSON box: the API's error is shown
    await page.check('input[name=fmt][value=json]');
    await page.fill('[data-testid=request-json]', JSON.stringify(args.badRequest));
    await page.click('[data-testid=run-query]');
    await page.waitForSelector('[data-testid=error]');
    out.errorText = await page.$eval('[data-testid=error]', (e) => e.textContent);
    await shot(page, 'explorer-query-error');
    // Downloads: CSV and JSON of the page, Parquet of the dataset
    await page.fill('[data-testid=request-json]', JSON.stringify({ page_size: 3, order_by: [{ col: args.build.order[0].col }] }));
    await runQuery(page);
    out.downloads = {};
    for (const k of ['csv', 'json', 'parquet']) {
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid=download-${k}]`)]);
      const p = await dl.path();
      out.downloads[k] = { name: dl.suggestedFilename(), b64: fs.readFileSync(p).toString('base64') };
    }
  },

  // One builder run: the request sent and the table shown.
  async build(page) {
    await open(page, `#/query/${args.dataset}`);
    await page.waitForSelector('[data-testid=request-json]');
    await build(page, args.build);
    out.sentBody = (await runQuery(page)).body;
    out.table = await tableCells(page);
  },

  // A group-by drawn as bar and line charts on a canvas.
  async chart(page) {
    await open(page, `#/query/${args.dataset}`);
    await page.waitForSelector('[data-testid=request-json]');
    await build(page, args.build);
    out.sentBody = (await runQuery(page)).body;
    out.table = await tableCells(page);
    await page.click('[data-testid=chart-toggle]');
    const painted = async () => {
      await page.waitForSelector('[data-testid=chart][data-rendered]');
      await page.waitForTimeout(200);
      return page.$eval('[data-testid=chart]', (c) => {
        // read through a copy so the page's own canvas is never read back
        const copy = document.createElement('canvas');
        copy.width = c.width;
        copy.height = c.height;
        const g = copy.getContext('2d', { willReadFrequently: true });
        g.drawImage(c, 0, 0);
        const d = g.getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
        return { painted: n, width: c.width, height: c.height, label: c.getAttribute('aria-label') };
      });
    };
    out.bar = await painted();
    await shot(page, 'explorer-chart-bar');
    await page.selectOption('[data-testid=chart-type]', 'line');
    await page.waitForTimeout(300);
    out.line = await painted();
    await shot(page, 'explorer-chart-line');
  },

  // Admin actions through the UI with the token typed once.
  async admin(page) {
    await open(page, '#/datasets');
    await page.waitForSelector('[data-testid=dataset-list] tbody tr');
    await setToken(page, args.token);
    // register
    await page.click('[data-testid=tab-register]');
    await page.fill('[data-testid=reg-name]', args.register.name);
    await page.fill('[data-testid=reg-location]', args.register.location);
    await page.click('[data-testid=register]');
    out.register = await waitNotice(page);
    await shot(page, 'explorer-register');
    // persist another
    await page.fill('[data-testid=reg-name]', args.persist.name);
    await page.fill('[data-testid=reg-location]', args.persist.location);
    await page.click('[data-testid=persist]');
    await page.waitForFunction(() => /Persisted|error/i.test(document.querySelector('[data-testid=notice], [data-testid=error]')?.textContent || ''));
    out.persist = await waitNotice(page);
    // reload one
    await page.click('[data-testid=tab-datasets]');
    await page.waitForSelector(`[data-testid=reload-${args.dataset}]`);
    await page.click(`[data-testid=reload-${args.dataset}]`);
    await page.waitForFunction((n) => (document.querySelector('[data-testid=notice]')?.textContent || '').includes(`Reloaded ${n}`) || document.querySelector('[data-testid=error]'), args.dataset);
    out.reload = await waitNotice(page);
    // reload-all: cancel first, then confirm
    const nReloadAll = () => out.requests.filter((r) => r.url.endsWith('/datasets/reload-all')).length;
    await page.click('[data-testid=reload-all]');
    await page.waitForSelector('dialog[open]');
    await shot(page, 'explorer-reload-all-confirm');
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog[open]', { state: 'detached' }).catch(() => {});
    await page.waitForFunction(() => !document.querySelector('dialog[open]'));
    out.reloadAllAfterCancel = nReloadAll();
    await page.click('[data-testid=reload-all]');
    await page.click('[data-testid=confirm]');
    await page.waitForFunction(() => (document.querySelector('[data-testid=notice]')?.textContent || '').includes('Reload-all'));
    out.reloadAll = await waitNotice(page);
    out.reloadAllAfterConfirm = nReloadAll();
    out.storage = await storage(page);
    out.html = await page.content();
  },

  // /sql in the SQL tab, and save-as-dataset / delete when /queries exists.
  async sql(page) {
    await open(page, '#/sql');
    await page.waitForSelector('[data-testid=sql-text], [data-testid=sql-disabled]');
    if (await page.$('[data-testid=sql-disabled]')) {
      out.disabled = await page.$eval('[data-testid=sql-disabled]', (e) => e.textContent);
      await shot(page, 'explorer-sql-disabled');
      return;
    }
    if (args.token) await setToken(page, args.token);
    await page.fill('[data-testid=sql-text]', args.sql);
    const before = out.requests.length;
    await page.click('[data-testid=run-sql]');
    await page.waitForSelector('[data-testid=results], [data-testid=error]');
    out.sentBody = out.requests.slice(before).find((r) => r.url.includes('/sql'))?.body;
    out.table = await tableCells(page);
    out.saveForm = !!(await page.$('[data-testid=save-form]'));
    await shot(page, 'explorer-sql');
    if (!out.saveForm || !args.save) return;
    await page.fill('[data-testid=save-form] input[name=name]', args.save.name);
    await page.click('[data-testid=save-dataset]');
    await page.waitForFunction(() => /published|failed/.test(document.querySelector('[data-testid=save-progress]')?.textContent || '') || document.querySelector('[data-testid=save-form] [data-testid=error]'), null, { timeout: 60000 });
    out.saveProgress = await page.$eval('[data-testid=save-progress]', (e) => e.textContent).catch(() => null);
    out.saveError = await page.$eval('[data-testid=save-form] [data-testid=error]', (e) => e.textContent).catch(() => null);
    out.saveUrl = out.requests.find((r) => r.method === 'POST' && r.url.includes('/queries'))?.url;
    await shot(page, 'explorer-save-as-dataset');
    // the saved dataset reloads like any other
    await page.click('[data-testid=tab-datasets]');
    await page.waitForSelector(`[data-testid=reload-${args.save.name}]`);
    await page.click(`[data-testid=reload-${args.save.name}]`);
    await page.waitForFunction((n) => (document.querySelector('[data-testid=notice]')?.textContent || '').includes(`Reloaded ${n}`) || document.querySelector('[data-testid=error]'), args.save.name);
    out.savedReload = await waitNotice(page);
    out.statusAfterReload = await page.evaluate(async (u) => (await fetch(u)).json(), `${new URL(args.url).origin}${args.apiPrefix || ''}/api/v1/datasets/${args.save.name}/status`);
    await page.waitForSelector(`[data-testid=delete-${args.save.name}]`);
    await page.click(`[data-testid=delete-${args.save.name}]`);
    await page.click('[data-testid=confirm]');
    await page.waitForFunction((n) => (document.querySelector('[data-testid=notice]')?.textContent || '').includes(`Deleted ${n}`) || document.querySelector('[data-testid=error]'), args.save.name);
    out.deleted = await waitNotice(page);
    out.storage = await storage(page);
  },

  // Badges move from pending/building to published without a click.
  async polling(page) {
    // The first list the page rendered, recorded in the page as it renders:
    // read afterwards from here, a loaded machine could first let the page
    // poll again and see the builds already published.
    await page.addInitScript(() => {
      const grab = () => {
        const trs = document.querySelectorAll('[data-testid=dataset-list] tbody tr');
        if (window.__firstStates || !trs.length) return;
        window.__firstStates = [...trs].map((tr) => [tr.dataset.name, tr.querySelector('[data-state]')?.dataset.state]);
      };
      new MutationObserver(grab).observe(document, { childList: true, subtree: true });
    });
    await page.goto(args.url);
    await page.waitForSelector('[data-testid=dataset-list] tbody tr');
    out.first = await page.evaluate(() => window.__firstStates);
    await shot(page, 'explorer-building');
    await page.waitForFunction(() => {
      const s = [...document.querySelectorAll('[data-testid=dataset-list] [data-state]')];
      return s.length > 0 && s.every((e) => e.dataset.state === 'published');
    }, null, { timeout: 120000 });
    out.last = await page.$$eval('[data-testid=dataset-list] tbody tr', (trs) =>
      trs.map((tr) => [tr.dataset.name, tr.querySelector('[data-state]').dataset.state]));
    out.listCalls = out.requests.filter((r) => r.url.endsWith('/api/v1/datasets')).length;
  },

  // Which admin controls show without /queries.
  async controls(page) {
    await open(page, '#/datasets');
    await page.waitForSelector('[data-testid=dataset-list] tbody tr');
    await page.waitForLoadState('networkidle');
    out.deleteButtons = await page.$$eval('[data-testid^=delete-]', (b) => b.length);
    await page.click('[data-testid=tab-sql]');
    await page.waitForSelector('[data-testid=sql-text], [data-testid=sql-disabled]');
    out.saveForm = !!(await page.$('[data-testid=save-form]'));
  },

  // The environment badge of every server in args.urls.
  async badges(page) {
    out.badges = [];
    for (const u of args.urls) {
      await page.goto(u);
      await page.waitForSelector('[data-testid=tab-datasets]');
      const b = await page.$('[data-testid=env-badge]');
      out.badges.push(b ? await b.evaluate((e) => ({
        text: e.textContent, cls: e.className, bg: getComputedStyle(e).backgroundColor,
      })) : null);
    }
    await shot(page, 'explorer-badge', { fullPage: false, clip: { x: 0, y: 0, width: 640, height: 60 } });
  },

  // Authorization Code + PKCE against the local test issuer.
  async pkce(page) {
    await page.goto(`${args.url}#/datasets`);
    await page.waitForSelector('[data-testid=sign-in]');
    await page.waitForLoadState('networkidle');
    out.before = {
      error: await page.$eval('[data-testid=error]', (e) => e.textContent).catch(() => null),
      rows: await page.$$eval('[data-testid=dataset-list] tbody tr', (t) => t.map((r) => r.dataset.name)),
    };
    await page.click('[data-testid=sign-in]');
    await page.waitForSelector('[data-testid=signed-in]', { timeout: 30000 });
    out.urlAfter = page.url();
    await page.click('[data-testid=refresh]');
    await page.waitForLoadState('networkidle');
    await page.waitForSelector('[data-testid=dataset-list] tbody tr');
    out.after = {
      error: await page.$eval('[data-testid=error]', (e) => e.textContent).catch(() => null),
      rows: await page.$$eval('[data-testid=dataset-list] tbody tr', (t) => t.map((r) => r.dataset.name)),
    };
    out.storage = await storage(page);
    await shot(page, 'explorer-signed-in');
  },

  // Issue 28's Explorer: a shared URL, sort, row detail, facets, paging,
  // copy as, export, cancel, charts, statistics, the SQL editor, help, the
  // dark theme, the admin token check, a malformed URL.
  async explore(page) {
    const waitIdle = async () => {
      await page.waitForFunction(() => document.querySelector('[data-testid=run-query]')?.textContent === 'Run query');
      await page.waitForSelector('[data-testid=results], [data-testid=no-rows], [data-testid=error]');
    };
    const lastQuery = () => out.requests.filter((r) => r.url.includes('/query') && r.method === 'POST').pop();
    // Open a shared query URL and wait for ITS answer. Only the hash changes,
    // so the previous query's results stay on the page until the page has
    // sent this one: waiting for results alone could read the old ones.
    const openQuery = async (dataset, q) => {
      const before = out.requests.length;
      await page.goto(`${args.url}#/query/${dataset}?q=${encodeURIComponent(JSON.stringify(q))}`);
      const want = JSON.stringify(q);
      const sent = () => out.requests.slice(before).some((r) => r.method === 'POST'
        && r.url.includes(`/datasets/${dataset}/query`) && r.body && JSON.stringify(JSON.parse(r.body)) === want);
      for (const t0 = Date.now(); !sent(); await page.waitForTimeout(20))
        if (Date.now() - t0 > 20000) throw new Error(`the page did not send ${want}`);
      await page.waitForSelector('[data-testid=results]');
      await waitIdle();
    };
    // 1. a shared URL runs its query
    await page.goto(`${args.url}#/query/${args.dataset}?q=${encodeURIComponent(JSON.stringify(args.shared))}`);
    await page.waitForSelector('[data-testid=results]');
    await waitIdle();
    out.sharedBody = lastQuery()?.body;
    out.sharedTable = await tableCells(page);
    out.total = await page.$eval('[data-testid=total]', (e) => e.textContent).catch(() => null);
    await page.waitForSelector('[data-testid=facets] .facet-value');
    await shot(page, 'explorer-query-shared');
    // 2. sort by a header; back restores the previous URL and table
    const hashBefore = await page.evaluate(() => location.hash);
    await page.click('[data-testid=results] th button.sort >> text=fare');
    const sortedOn = (c) => document.querySelector('[data-testid=results] th[aria-sort] button')?.textContent === c;
    await page.waitForFunction(sortedOn, 'fare');
    await waitIdle();
    out.sortBody = lastQuery()?.body;
    out.sortHash = await page.evaluate(() => location.hash);
    out.sortedTable = await tableCells(page);
    await page.goBack();
    await page.waitForFunction((h) => location.hash === h, hashBefore);
    await page.waitForFunction(sortedOn, 'trip_id');
    await waitIdle();
    out.backTable = await tableCells(page);
    // 3. a row's detail
    await page.click('[data-testid=results] tbody tr:nth-child(2)');
    await page.waitForSelector('[data-testid=row-detail]');
    out.detail = await page.$eval('[data-testid=row-detail]', (e) => e.innerText);
    await shot(page, 'explorer-row-detail');
    await page.keyboard.press('Escape');
    await page.waitForSelector('[data-testid=row-detail]', { state: 'detached' });
    // 4. a facet value filters
    await page.waitForSelector('[data-testid=facets] .facet-value');
    const facet = await page.$eval('[data-testid=facets] .facet[data-column=payment] .facet-value', (b) => ({
      label: b.querySelector('.label').textContent, count: b.querySelector('.count').textContent }));
    out.facet = facet;
    await page.click('[data-testid=facets] .facet[data-column=payment] .facet-value');
    await page.waitForFunction(() => (document.querySelector('[data-testid=request-json]')?.value || '').includes('"eq"'));
    await waitIdle();
    out.facetBody = lastQuery()?.body;
    out.facetTotal = await page.$eval('[data-testid=total]', (e) => e.textContent).catch(() => null);
    // 5. paging: the page box follows
    await page.click('[data-testid=next-page]');
    await page.waitForFunction(() => document.querySelector('[data-testid=page]')?.textContent === 'page 2');
    out.pageBox = await page.inputValue('[data-testid=page-input]');
    // 6. copy as
    out.snippets = {};
    for (const k of ['curl', 'python', 'js']) {
      await page.click(`[data-testid=copy-${k}]`);
      out.snippets[k] = await page.$eval('[data-testid=snippet] pre', (e) => e.textContent);
    }
    // 7. export every matching row
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-csv]')]);
    out.exportName = dl.suggestedFilename();
    out.exportCsv = fs.readFileSync(await dl.path(), 'utf8');
    // 7b. formula cells in CSV downloads
    await openQuery('evil', { order_by: [{ col: 'id' }] });
    for (const [k, sel] of [['evilPage', 'download-csv'], ['evilAll', 'export-csv']]) {
      const [d] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid=${sel}]`)]);
      out[k] = fs.readFileSync(await d.path(), 'utf8');
    }
    // 8. a chart of a group-by with two measures: one axis each
    await openQuery(args.dataset, args.grouped);
    await page.click('[data-testid=chart-toggle]');
    await page.waitForSelector('[data-testid=chart][data-rendered]');
    out.groupedChart = await page.$eval('[data-testid=chart]', (c) => ({ axes: c.dataset.axes, label: c.getAttribute('aria-label') }));
    await page.waitForTimeout(200);
    await shot(page, 'explorer-chart-two-axes');
    // 9. a time series from a bucketed group-by
    await openQuery(args.dataset, args.timeseries);
    // (the chart stays open from the last result)
    if (await page.$eval('[data-testid=chart-toggle]', (b) => b.getAttribute('aria-expanded')) !== 'true')
      await page.click('[data-testid=chart-toggle]');
    await page.waitForFunction(() => (document.querySelector('[data-testid=chart][data-rendered]')?.getAttribute('aria-label') || '').includes('pickup_at'));
    out.timeChart = await page.$eval('[data-testid=chart]', (c) => c.getAttribute('aria-label'));
    await page.waitForTimeout(200);
    await shot(page, 'explorer-chart-time-series');
    // 10. cancel a running query
    // Only the hash changes: the previous dataset's request box is still on
    // the page until the new one's schema came (changing dataset resets the
    // box). Fill once the builder shows the slow dataset's columns, and check
    // the box holds the slow request before running it.
    await page.goto(`${args.url}#/query/${args.slowDataset}`);
    await page.waitForFunction((col) => !!document.querySelector(`[data-testid=b-columns] input[value="${col}"]`), args.slow.group_by[0]);
    await page.fill('[data-testid=request-json]', JSON.stringify(args.slow));
    await page.waitForFunction(() => (document.querySelector('[data-testid=request-json]')?.value || '').includes('count_distinct'));
    await page.click('[data-testid=run-query]');
    await page.waitForSelector('[data-testid=cancel-query]');
    await page.click('[data-testid=cancel-query]');
    await page.waitForSelector('[data-testid=error]');
    out.cancelError = await page.$eval('[data-testid=error]', (e) => e.textContent);
    out.cancelResults = !!(await page.$('[data-testid=results]'));
    // 11. column statistics in the schema view
    await page.goto(`${args.url}#/datasets/${args.dataset}`);
    await page.waitForSelector('[data-testid=schema][data-stats=loaded]');
    await page.waitForSelector('[data-testid=schema] svg.mini-hist');
    out.schemaRows = await page.$$eval('[data-testid=schema] tbody tr', (trs) => trs.map((tr) => [tr.dataset.column, !!tr.querySelector('svg.mini-hist, ul.mini-top'), tr.innerText]));
    await shot(page, 'explorer-schema-stats');
    // 12. the SQL editor: completion, an error at its position, history
    await page.goto(`${args.url}#/sql`);
    // the editor is made again once the datasets' schemas came: type into that one
    await page.waitForSelector('.cm-content[data-testid=sql-text]:not([data-tables="0"])');
    await page.click('.cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('SELECT * FROM tr');
    await page.keyboard.press('Control+Space');
    await page.waitForSelector('.cm-tooltip-autocomplete');
    // Typing opens completions as it goes: the tooltip seen first may still be
    // the one for "SELECT" (CI read ['SELECT', 'SELECTIVE']). Wait for the list
    // of the word "tr"; if it never comes, the test's assertion shows what did.
    await page.waitForFunction(() => [...document.querySelectorAll('.cm-tooltip-autocomplete li')]
        .some((l) => l.textContent.toLowerCase().startsWith('tr')), null, {timeout: 10000}).catch(() => {});
    out.completions = await page.$$eval('.cm-tooltip-autocomplete li', (lis) => lis.map((l) => l.textContent));
    await shot(page, 'explorer-sql-completion');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+a');
    await page.keyboard.type(args.badSql);
    await page.click('[data-testid=run-sql]');
    await page.waitForSelector('[data-testid=error-position]');
    out.errorPosition = await page.$eval('[data-testid=error-position]', (e) => e.textContent);
    out.selection = await page.evaluate(() => window.getSelection().toString());
    await shot(page, 'explorer-sql-error');
    out.history = await page.$$eval('[data-testid=sql-history] option', (os) => os.map((o) => o.value).filter(Boolean));
    out.sqlHash = await page.evaluate(() => location.hash);
    // 13. keyboard help
    await page.focus('[data-testid=tab-sql]');
    await page.keyboard.press('?');
    await page.waitForSelector('[data-testid=help][open]');
    out.help = await page.$eval('[data-testid=help]', (e) => e.innerText);
    await shot(page, 'explorer-help');
    await page.keyboard.press('Escape');
    // While the modal help is open the page behind it is inert: a fill would
    // type into nothing. Go on once it is closed.
    await page.waitForSelector('[data-testid=help]:not([open])', { state: 'attached' });
    // 14. a wrong admin token is said at once
    await page.fill('[data-testid=admin-token]', 'not-the-token');
    await page.click('[data-testid=admin-token-set]');
    await page.waitForSelector('[data-testid=token-problem]');
    out.tokenProblem = await page.$eval('[data-testid=token-problem]', (e) => e.textContent);
    out.tokenSet = !!(await page.$('[data-testid=token-state]'));
    // 15. a malformed URL does not blank the page
    await page.goto(`${args.url}#/query/%E0%A4%A?q=%7B%22bad`);
    await page.waitForSelector('[data-testid=tab-query]');
    out.malformed = await page.$eval('main', (m) => m.innerText.slice(0, 300));
    // 16. the dark theme follows the system
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto(`${args.url}#/query/${args.dataset}?q=${encodeURIComponent(JSON.stringify(args.shared))}`);
    await page.waitForSelector('[data-testid=results]');
    await waitIdle();
    await page.waitForSelector('[data-testid=facets] .facet-value');
    out.darkBg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    await shot(page, 'explorer-dark');
    await page.goto(`${args.url}#/datasets/${args.dataset}`);
    await page.waitForSelector('[data-testid=schema][data-stats=loaded]');
    await shot(page, 'explorer-dark-schema');
  },

  // A page on another origin calling the API with fetch (CORS): what it
  // could read, and what the browser refused.
  // "Copy as" for a shared query URL: the three snippets' text.
  async snippets(page) {
    // args.q may be the request's text: a number past 2^53 survives no JSON.parse here
    const q = typeof args.q === 'string' ? args.q : JSON.stringify(args.q);
    if (args.token) {
      await open(page, '#/datasets');
      await setToken(page, args.token);
    }
    await page.goto(`${args.url}#/query/${args.dataset}?q=${encodeURIComponent(q)}`);
    await page.waitForSelector('[data-testid=results], [data-testid=no-rows]');
    out.sentBody = out.requests.filter((r) => r.method === 'POST' && r.url.includes('/query')).pop()?.body;
    out.table = await tableCells(page);
    out.timing = await page.$eval('[data-testid=timing]', (e) => e.textContent).catch(() => null);
    out.total = await page.$eval('[data-testid=total]', (e) => e.textContent).catch(() => null);
    out.snippets = {};
    for (const k of ['curl', 'python', 'js']) {
      await page.click(`[data-testid=copy-${k}]`);
      out.snippets[k] = await page.$eval('[data-testid=snippet] pre', (e) => e.textContent);
    }
  },

  // The SQL editor's completion: for each args.picks label, type
  // args.prefix, complete (Ctrl+Space), take that option; the editor's text.
  async complete(page) {
    await page.goto(`${args.url}#/sql`);
    await page.waitForSelector('[data-testid=sql-text]');
    await page.waitForFunction(() => document.querySelector('[data-testid=sql-text]')?.getAttribute('data-tables') !== '0');
    out.completed = {};
    for (const pick of args.picks) {
      await page.click('[data-testid=sql-text]');
      await page.keyboard.press('Control+a');
      await page.keyboard.press('Delete');
      await page.keyboard.type(args.prefix);
      await page.keyboard.press('Control+Space');
      await page.waitForSelector('.cm-tooltip-autocomplete li');
      const labels = await page.$$eval('.cm-tooltip-autocomplete li', (ls) => ls.map((l) => l.textContent));
      const i = labels.indexOf(pick);
      if (i < 0) throw new Error(`no completion ${pick} among ${JSON.stringify(labels)}`);
      await page.locator('.cm-tooltip-autocomplete li').nth(i).click();
      await page.waitForSelector('.cm-tooltip-autocomplete', { state: 'detached' });
      out.completed[pick] = await page.$eval('[data-testid=sql-text]', (e) => e.textContent);
    }
  },

  async cors(page) {
    await page.goto(args.pageUrl);
    out.calls = await page.evaluate(async (a) => {
      const res = [];
      const q = encodeURIComponent(JSON.stringify({ columns: ['id'], page_size: 2, include_total: true }));
      const tries = [
        ['get', `${a.api}/api/v1/datasets/t/query?q=${q}`, {}],
        ['post', `${a.api}/api/v1/datasets/t/query`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'cors-1' },
          body: JSON.stringify({ columns: ['id'], page_size: 3, include_total: true }) }],
        ['error', `${a.api}/api/v1/datasets/nope/status`, {}],
      ];
      for (const [name, url, opts] of tries) {
        try {
          const r = await fetch(url, opts);
          const body = await r.json();
          res.push({ name, ok: true, status: r.status, total: r.headers.get('X-Total-Count'),
            etag: r.headers.get('ETag'), body });
        } catch (e) {
          res.push({ name, ok: false, error: String(e) });
        }
      }
      return res;
    }, { api: args.api });
  },

  // The docs site: search works offline (the lunr worker), no console errors.
  async docs(page) {
    await page.goto(args.url);
    await page.waitForSelector('body');
    out.title = await page.title();
    out.pages = [];
    for (const p of args.pages) {
      await page.goto(p);
      await page.waitForLoadState('networkidle');
      out.pages.push(await page.title());
    }
    await page.goto(args.url);
    await page.waitForLoadState('networkidle');
    await page.keyboard.press('s'); // the theme's search shortcut opens the dialog
    await page.waitForSelector('#mkdocs-search-query', { state: 'visible' });
    // the theme searches on keyup: type it as a person would
    await page.locator('#mkdocs-search-query').pressSequentially(args.search, { delay: 20 });
    await page.waitForFunction(() => document.querySelectorAll('#mkdocs-search-results a').length > 0);
    out.searchHits = await page.$$eval('#mkdocs-search-results a', (as) => as.map((a) => a.getAttribute('href')));
    await shot(page, 'docs-search');
    const offsite = out.requests.filter((r) => !r.url.startsWith(args.origin) && !r.url.startsWith('data:'));
    out.offsite = offsite.map((r) => r.url);
  },
};

// Runs one scenario in a new context of `browser`; returns its report.
async function run(browser, scenario, scenarioArgs) {
  args = scenarioArgs || {};
  out = { requests: [], console: [], pageErrors: [] };
  const report = out;
  let ctx = null;
  try {
    if (!scenarios[scenario]) throw new Error(`no scenario ${scenario}`);
    ctx = await browser.newContext(CONTEXT);
    ctx.setDefaultTimeout(20000);
    const page = await ctx.newPage();
    watch(page, report);
    await scenarios[scenario](page);
  } catch (e) {
    report.failure = String(e && e.stack || e);
  } finally {
    if (ctx) await ctx.close().catch(() => {});
  }
  return report;
}

const browser = await chromium.launch(LAUNCH);
if (process.argv[2] === '--serve') {
  // One browser for many scenarios (tests/e2e/explorer/browser.py): a
  // request per input line, {"scenario": ..., "args": {...}}; a report per
  // output line. Ends at the end of the input.
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    const report = await run(browser, req.scenario, req.args);
    process.stdout.write(JSON.stringify(report) + '\n');
  }
} else {
  const [scenario, rawArgs] = process.argv.slice(2);
  process.stdout.write(JSON.stringify(await run(browser, scenario, JSON.parse(rawArgs || '{}'))));
}
await browser.close();
