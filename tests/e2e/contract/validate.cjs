#!/usr/bin/env node
/*
 * The contract checked from outside (issue 28 item 6): every HTTP exchange
 * the e2e suite recorded (tests/e2e/contract_rec.py) is validated against the
 * OpenAPI document its own server served, by Stoplight Prism's HTTP response
 * validator (@stoplight/prism-http, pinned in tests/e2e/package.json; the
 * validator of `prism proxy --errors`): the status must be documented for the
 * operation, the Content-Type must be one of its media types, the body must
 * match that media type's schema and documented headers their schemas.
 *
 *   node tests/e2e/contract/validate.cjs [--min N] DIR     (make contract-check)
 *
 * Bodies the recorder kept (text up to its cap) are validated; for the others
 * (binary Arrow/Parquet, streamed, HEAD, 304) status, media type and headers
 * are. An answer with neither X-Request-Id nor Content-Type is a problem by
 * itself: since vitrine has its own HTTP engine every answer, refusals of a
 * bad head included, is one JSON response with a request id (libmicrohttpd
 * used to send its own canned HTML ones). Exchanges whose path no operation of the document matches (hostile
 * paths, wrong methods: the server answers those 404/405 by design) are
 * counted, not failed. Mismatches are listed grouped by operation, status and
 * message with a count and the first test that saw each; the exit status is
 * 1 when there is any. A run that recorded nothing (a selection of tests
 * whose servers serve no document, or no DIR at all) passes with a note,
 * unless --min N asks for at least N validated exchanges (`make e2e` asks
 * for some on a whole-suite run: a recorder that silently stopped recording
 * fails there).
 */
'use strict';
const fs = require('fs');
const path = require('path');
const { getHttpOperationsFromSpec } = require('@stoplight/prism-http');
const route = require('@stoplight/prism-http/dist/router').default;
const { validateOutput } = require('@stoplight/prism-http/dist/validator');

const SEVERITY = ['error', 'warning', 'info', 'hint'];

function readLines(dir) {
  const exchanges = [];
  const docOf = new Map();
  const problems = [];
  for (const f of fs.readdirSync(dir).filter(n => /^exchanges-.*\.ndjson$/.test(n)).sort()) {
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let o;
      try {
        o = JSON.parse(line);
      } catch (e) {
        problems.push(`${f}: unreadable line (${e.message})`);
        continue;
      }
      if (o.recorder_error) problems.push(`recorder error: ${o.recorder_error}`);
      else if ('doc' in o) docOf.set(o.server, o.doc);
      else exchanges.push(o);
    }
  }
  return { exchanges, docOf, problems };
}

/* A copy of an operation whose responses keep their media types but lose
 * their schemas: for exchanges whose body was not kept. */
function withoutBodySchemas(resource) {
  return {
    ...resource,
    responses: resource.responses.map(r => ({
      ...r,
      contents: (r.contents || []).map(c => {
        const { schema, examples, ...rest } = c;
        return rest;
      }),
    })),
  };
}

function isJson(ctype) {
  const t = (ctype || '').split(';')[0].trim().toLowerCase();
  return t === 'application/json' || t.endsWith('+json');
}

async function main() {
  const args = process.argv.slice(2);
  let min = 0;
  const at = args.indexOf('--min');
  if (at >= 0) {
    min = Number(args[at + 1]);
    args.splice(at, 2);
  }
  const dir = args[0];
  if (!dir || !Number.isInteger(min) || min < 0) {
    console.error('usage: validate.cjs [--min N] DIR');
    process.exit(2);
  }
  if (!fs.existsSync(dir)) {
    console.log(`contract: nothing recorded in ${dir} (run the e2e suite with VT_CONTRACT_DIR)`);
    process.exit(min > 0 ? 1 : 0);
  }
  const { exchanges, docOf, problems } = readLines(dir);
  const opsByDoc = new Map();
  const rawDocs = new Map();
  const stripped = new WeakMap();
  const mismatches = new Map();
  let validated = 0, distinct = 0, bodies = 0, noDoc = 0, library = 0;
  const unrouted = new Map();
  /* Identical exchanges (readiness polls, repeated queries) are validated
   * once: the key leaves out headers that differ on every answer. */
  const seen = new Map();
  const VOLATILE = new Set(['date', 'x-request-id', 'server-timing', 'traceparent']);

  for (const ex of exchanges) {
    const sha = docOf.get(ex.server);
    if (!sha) {
      noDoc++;
      continue;
    }
    if (!opsByDoc.has(sha)) {
      const doc = JSON.parse(fs.readFileSync(path.join(dir, 'docs', `${sha}.json`), 'utf8'));
      opsByDoc.set(sha, await getHttpOperationsFromSpec(doc));
      rawDocs.set(sha, doc);
    }
    const key = JSON.stringify([sha, ex.method, ex.path, ex.outside, ex.status, ex.body, ex.text,
      Object.entries(ex.headers).filter(([k]) => !VOLATILE.has(k)).sort()]);
    const prior = seen.get(key);
    if (prior) {
      if (prior.library) {
        library++;
      } else if (prior.unrouted) {
        unrouted.set(prior.unrouted, unrouted.get(prior.unrouted) + 1);
      } else {
        validated++;
        for (const m of prior.found) m.count++;
      }
      continue;
    }
    const found = [];
    seen.set(key, { found, unrouted: null, library: false });
    if (!ex.headers['x-request-id'] && !ex.headers['content-type']) {
      /* Not a vitrine answer: every answer of the HTTP engine carries
       * both (see the header comment); counted, and the run fails. */
      library++;
      seen.get(key).library = true;
      continue;
    }
    const ops = opsByDoc.get(sha);
    const r = route({ resources: ops, input: { method: ex.method, url: { path: ex.path } } });
    if (r._tag === 'Left') {
      const k = `${ex.method.toUpperCase()} ${ex.status}`;
      unrouted.set(k, (unrouted.get(k) || 0) + 1);
      seen.get(key).unrouted = k;
      continue;
    }
    let resource = r.right;
    if (ex.prefix) {
      /* With server.prefix, an operation mounted at the root (its own
       * servers entry "/") answers outside the prefix only, every other one
       * under it only; the other requests reach no operation (404). */
      const item = rawDocs.get(sha).paths[resource.path] || {};
      const root = (item.servers || []).some(sv => sv.url === '/');
      if (root !== !!ex.outside) {
        const k = `${ex.method.toUpperCase()} ${ex.status}`;
        unrouted.set(k, (unrouted.get(k) || 0) + 1);
        seen.get(key).unrouted = k;
        continue;
      }
    }
    const ctype = ex.headers['content-type'];
    let body;
    let note = null;
    if (ex.body === 'text') {
      if (isJson(ctype)) {
        try {
          body = JSON.parse(ex.text);
        } catch (e) {
          note = `body is not JSON (${e.message})`;
        }
      } else {
        body = ex.text;
      }
      bodies++;
    }
    if (ex.body !== 'text' || note) {
      if (!stripped.has(resource)) stripped.set(resource, withoutBodySchemas(resource));
      resource = stripped.get(resource);
    }
    const v = validateOutput({
      resource,
      element: { statusCode: ex.status, headers: ex.headers, body },
    });
    validated++;
    distinct++;
    const diags = v._tag === 'Left' ? v.left.map(d => {
      const where = d.path && d.path.length ? ` at ${d.path.join('.')}` : '';
      return `${SEVERITY[d.severity] || d.severity}: ${d.message}${where}`;
    }) : [];
    if (note) diags.push(`error: ${note}`);
    for (const d of diags) {
      const mkey = `${ex.method.toUpperCase()} ${resource.path} -> ${ex.status} ` +
                  `(${ctype || 'no Content-Type'}): ${d}`;
      let m = mismatches.get(mkey);
      if (m) m.count++;
      else mismatches.set(mkey, m = { count: 1, test: ex.test, path: ex.path,
                                     text: ex.body === 'text' ? ex.text.slice(0, 300) : null });
      found.push(m);
    }
  }

  console.log(`contract: ${exchanges.length} exchanges recorded, ${validated} validated ` +
              `(${distinct} distinct, ${bodies} of them with their bodies) against ${opsByDoc.size} served documents; ` +
              `${noDoc} from servers whose document was not kept (killed, swagger disabled), ` +
              `${[...unrouted.values()].reduce((a, b) => a + b, 0)} to paths or methods no ` +
              `operation has (${[...unrouted].map(([k, n]) => `${k}: ${n}`).join(', ') || 'none'}); ` +
              `${library} without X-Request-Id and Content-Type`);
  if (library) problems.push(`${library} answers had neither X-Request-Id nor Content-Type (every answer must be vitrine's JSON)`);
  for (const p of problems) console.log(`PROBLEM ${p}`);
  if (mismatches.size) {
    console.log(`contract: ${mismatches.size} kinds of mismatch between the server and its OpenAPI document:`);
    for (const [key, m] of [...mismatches].sort()) {
      const shown = m.path.length > 160 ? `${m.path.slice(0, 160)}... (${m.path.length} bytes)` : m.path;
      console.log(`- ${key}\n    ${m.count}x, first in ${m.test || '?'} (${shown})` +
                  (m.text ? `\n    body: ${m.text}` : ''));
    }
  }
  if (mismatches.size || problems.length) process.exit(1);
  if (validated < min) {
    console.log(`contract: only ${validated} exchanges validated, fewer than --min ${min}`);
    process.exit(1);
  }
  console.log(validated ? 'contract: every validated response matches its document'
                        : 'contract: nothing to validate');
}

main().catch(e => {
  console.error(e);
  process.exit(2);
});
