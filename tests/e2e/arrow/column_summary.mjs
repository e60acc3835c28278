// Summarises one column of Arrow IPC streams with the apache-arrow reader:
// for each file, one JSON line {"rows": n, "batches": k, "values": [distinct
// values of COLUMN, sorted], "nulls": n, "fields": [names]} or {"error": ...}.
// Small output for large streams (the atomicity test reads the version
// column of thousands of rows per stream).
//
// usage: node column_summary.mjs COLUMN FILE...
import { readFileSync } from 'node:fs';
import { RecordBatchReader } from 'apache-arrow';

const [column, ...files] = process.argv.slice(2);
for (const f of files) {
  let out;
  try {
    const reader = RecordBatchReader.from(readFileSync(f));
    reader.open();
    const fields = reader.schema.fields.map((x) => x.name);
    const idx = fields.indexOf(column);
    if (idx < 0) throw new Error(`no column ${column} in ${fields}`);
    let rows = 0;
    let batches = 0;
    let nulls = 0;
    const values = new Set();
    for (const batch of reader) {
      batches++;
      rows += batch.numRows;
      const col = batch.getChildAt(idx);
      for (let i = 0; i < batch.numRows; i++) {
        const v = col.get(i);
        if (v === null) nulls++;
        else values.add(typeof v === 'bigint' ? Number(v) : v);
      }
    }
    out = { rows, batches, nulls, fields, values: [...values].sort((a, b) => a - b) };
  } catch (e) {
    out = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
