// node `pg` (npm) with what BI back ends send it: array parameters
// (`= ANY($1)` with JavaScript arrays of strings, numbers and dates, an
// empty array, `$1::text[]`), typed parameters, a catalog query and a
// server-side cursor through SQL (DECLARE/FETCH/CLOSE). Prints one JSON
// object; tests/e2e/test_pgwire_bi.py asserts on it.
import pg from 'pg';

const port = parseInt(process.argv[2], 10);
const c = new pg.Client({host: '127.0.0.1', port, user: 'vitrine', database: 'vitrine'});
await c.connect();
const out = {};
const one = async (name, text, values) => {
  try {
    const r = await c.query(text, values);
    out[name] = r.rows;
  } catch (e) {
    out[name] = {error: e.message, code: e.code};
  }
};
await one('any_text', 'SELECT count(*)::int AS n FROM trips WHERE payment = ANY($1)', [['card', 'nope']]);
await one('any_int', 'SELECT count(*)::int AS n FROM trips WHERE trip_id = ANY($1)', [[1, 2, 3, 99999]]);
await one('any_empty', 'SELECT count(*)::int AS n FROM trips WHERE trip_id = ANY($1)', [[]]);
await one('any_date', 'SELECT count(*)::int AS n FROM trips WHERE day = ANY($1::date[])', [['2024-01-02', '2024-01-03']]);
await one('cast_text_array', 'SELECT $1::text[] AS a', [['x', 'y "z"', null]]);
await one('not_all', 'SELECT count(*)::int AS n FROM trips WHERE payment <> ALL($1)', [['card']]);
await one('typed', 'SELECT $1::int + 1 AS i, $2::float8 * 2 AS f, $3::bool AS b, $4::timestamptz AS t',
          [41, 1.25, true, new Date(Date.UTC(2024, 0, 2, 3, 4, 5))]);
await one('catalog', "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 ORDER BY 1", ['public']);
await c.query('BEGIN');
await c.query('DECLARE big CURSOR FOR SELECT trip_id FROM trips WHERE trip_id < 1000 ORDER BY trip_id');
let fetched = 0, batches = 0;
for (;;) {
  const r = await c.query('FETCH 300 FROM big');
  if (r.rows.length === 0) break;
  fetched += r.rows.length;
  batches++;
}
await c.query('CLOSE big');
await c.query('COMMIT');
out.cursor = {fetched, batches};
await c.end();
console.log(JSON.stringify(out));
