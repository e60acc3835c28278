// Decodes an Arrow IPC stream with the apache-arrow reader (a real,
// independent implementation) and prints it as one JSON document:
//   {"schema": [{name, type, nullable, metadata, children}],
//    "batches": [row counts], "rows": [{column: value}]}
// Values are rendered the way DuckDB's to_json renders them (dates
// "YYYY-MM-DD", timestamps "YYYY-MM-DD HH:MM:SS[.f]", intervals "1 year 3 days
// 00:00:04", blobs with \xHH escapes, 64/128-bit integers and decimals as exact
// JSON numbers) so the pytest side can compare them with DuckDB's own output.
// Raw buffers are read for the types whose get() is lossy (timestamps, times,
// decimals, intervals), so every bit the writer produced is checked.
//
// usage: node read_ipc.mjs [FILE...]   (stdin when no FILE; one line per file)
import { readFileSync } from 'node:fs';
import { RecordBatchReader, Type, makeVector } from 'apache-arrow';

const RAW = Symbol('raw');
const raw = (text) => ({ [RAW]: text });

function toJson(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object' && v[RAW] !== undefined) return v[RAW];
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return String(v);
  }
  if (typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(toJson).join(',') + ']';
  return '{' + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ':' + toJson(x)).join(',') + '}';
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

function extName(field) {
  return field.metadata?.get('ARROW:extension:name');
}
function extTypeName(field) {
  const m = field.metadata?.get('ARROW:extension:metadata');
  if (!m) return undefined;
  try { return JSON.parse(m).type_name; } catch { return undefined; }
}

// Days since the epoch -> YYYY-MM-DD (proleptic Gregorian, as DuckDB prints).
function fmtDate(days) {
  const d = new Date(0);
  d.setUTCFullYear(1970, 0, 1 + days);
  const y = d.getUTCFullYear();
  const ys = y < 0 ? '-' + pad(-y, 4) : pad(y, 4);
  return `${ys}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

// Fraction digits without trailing zeros (DuckDB trims them).
function frac(n, digits) {
  if (n === 0n) return '';
  return '.' + n.toString().padStart(digits, '0').replace(/0+$/, '');
}

// Time of day from a count of `perSec` units.
function fmtTimeOfDay(v, perSec, digits) {
  const secs = v / perSec;
  const f = v % perSec;
  return `${pad(secs / 3600n)}:${pad((secs / 60n) % 60n)}:${pad(secs % 60n)}${frac(f, digits)}`;
}

const UNIT = [[1n, 0], [1000n, 3], [1000000n, 6], [1000000000n, 9]]; // per second, digits

function fmtTimestamp(v, unit, tz) {
  const [perSec, digits] = UNIT[unit];
  const perDay = perSec * 86400n;
  let days = v / perDay;
  let rem = v % perDay;
  if (rem < 0n) { rem += perDay; days -= 1n; }
  const s = `${fmtDate(Number(days))} ${fmtTimeOfDay(rem, perSec, digits)}`;
  return tz ? s + '+00' : s;
}

// DuckDB's interval text: "1 year 2 months 3 days 04:05:06.7".
function fmtInterval(months, days, nanos) {
  const parts = [];
  const plural = (n, w) => `${n} ${w}${Math.abs(n) === 1 ? '' : 's'}`;
  const years = Math.trunc(months / 12);
  const mons = months - years * 12;
  if (years) parts.push(plural(years, 'year'));
  if (mons) parts.push(plural(mons, 'month'));
  if (days) parts.push(plural(days, 'day'));
  let micros = nanos / 1000n;
  if (micros !== 0n) {
    const neg = micros < 0n;
    if (neg) micros = -micros;
    parts.push((neg ? '-' : '') + fmtTimeOfDay(micros, 1000000n, 6));
  }
  return parts.length ? parts.join(' ') : '00:00:00';
}

// DuckDB's blob text: printable ASCII as is; other bytes and \\ ' " as \xHH.
function fmtBlob(bytes) {
  let s = '';
  for (const b of bytes) {
    if (b >= 32 && b <= 126 && b !== 92 && b !== 39 && b !== 34) s += String.fromCharCode(b);
    else s += '\\x' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return s;
}

// Little-endian two's complement words -> BigInt.
function wordsToBigInt(words, off, n, signed) {
  let v = 0n;
  for (let k = n - 1; k >= 0; k--) v = (v << 32n) | BigInt(words[off + k] >>> 0);
  const bits = BigInt(32 * n);
  if (signed && (v >> (bits - 1n)) & 1n) v -= 1n << bits;
  return v;
}
function bytesToBigInt(bytes, signed) {
  let v = 0n;
  for (let k = bytes.length - 1; k >= 0; k--) v = (v << 8n) | BigInt(bytes[k]);
  const bits = BigInt(8 * bytes.length);
  if (signed && (v >> (bits - 1n)) & 1n) v -= 1n << bits;
  return v;
}

function fmtDecimal(v, scale) {
  const neg = v < 0n;
  let s = (neg ? -v : v).toString();
  if (scale > 0) {
    s = s.padStart(scale + 1, '0');
    s = s.slice(0, s.length - scale) + '.' + s.slice(s.length - scale);
  } else if (scale < 0) {
    s += '0'.repeat(-scale);
  }
  return raw((neg ? '-' : '') + s);
}

function fmtUuid(bytes) {
  const h = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const vectors = new WeakMap();
function vec(data) {
  let v = vectors.get(data);
  if (!v) { v = makeVector(data); vectors.set(data, v); }
  return v;
}

function mapKey(k) {
  if (typeof k === 'string') return k;
  if (k && typeof k === 'object' && k[RAW] !== undefined) return k[RAW];
  return toJson(k);
}

// The value at logical index i of `data` (a column or child), as DuckDB's to_json would show it.
function cell(field, data, i) {
  const t = data.type;
  if (t.typeId === Type.Union || t.typeId === Type.DenseUnion || t.typeId === Type.SparseUnion) {
    const j = data.offset + i;
    const child = t.typeIdToChildIndex[data.typeIds[j]];
    const k = t.mode === 1 /* Dense */ ? data.valueOffsets[j] : j;
    // A union slot is null exactly when its selected child is (no validity of
    // its own); DuckDB's to_json then shows null, not {member: null}.
    const v = cell(t.children[child], data.children[child], k);
    return v === null ? null : { [t.children[child].name]: v };
  }
  if (!data.getValid(i)) return null;
  const j = data.offset + i;
  switch (t.typeId) {
    case Type.Dictionary: {
      const idx = Number(data.values[j]);
      return vecCell({ type: t.dictionary, metadata: field.metadata }, data.dictionary, idx);
    }
    case Type.Null:
      return null;
    case Type.Int: {
      const v = data.values[j];
      return typeof v === 'bigint' ? raw(v.toString()) : v;
    }
    case Type.Float:
    case Type.Bool:
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Utf8View:
      return vec(data).get(i);
    case Type.Binary:
    case Type.LargeBinary:
    case Type.BinaryView: {
      const bytes = vec(data).get(i);
      if (extTypeName(field) === 'bignum' || extTypeName(field) === 'bit') return fmtBlob(bytes);
      return fmtBlob(bytes);
    }
    case Type.FixedSizeBinary: {
      const w = t.byteWidth;
      const bytes = data.values.subarray(j * w, (j + 1) * w);
      if (extName(field) === 'arrow.uuid') return fmtUuid(bytes);
      const tn = extTypeName(field);
      if (tn === 'hugeint') return raw(bytesToBigInt(bytes, true).toString());
      if (tn === 'uhugeint') return raw(bytesToBigInt(bytes, false).toString());
      return fmtBlob(bytes);
    }
    case Type.Decimal: {
      const n = t.bitWidth / 32;
      return fmtDecimal(wordsToBigInt(data.values, j * n, n, true), t.scale);
    }
    case Type.Date: {
      const v = data.values[j];
      return t.unit === 0 ? fmtDate(v) : fmtDate(Number(BigInt(v) / 86400000n));
    }
    case Type.Time: {
      const [perSec, digits] = UNIT[t.unit];
      return fmtTimeOfDay(BigInt(data.values[j]), perSec, digits);
    }
    case Type.Timestamp:
      return fmtTimestamp(BigInt(data.values[j]), t.unit, t.timezone);
    case Type.Duration:
      return raw(BigInt(data.values[j]).toString());
    case Type.Interval: {
      if (t.unit === 2) { // MONTH_DAY_NANO: int32 months, int32 days, int64 nanos
        const w = data.values;
        const nanos = wordsToBigInt(w, 4 * j + 2, 2, true);
        return fmtInterval(w[4 * j], w[4 * j + 1], nanos);
      }
      if (t.unit === 0) return fmtInterval(data.values[j], 0, 0n);
      return fmtInterval(0, data.values[2 * j], BigInt(data.values[2 * j + 1]) * 1000000n);
    }
    case Type.List:
    case Type.LargeList: {
      const o = data.valueOffsets;
      const out = [];
      for (let k = Number(o[j]); k < Number(o[j + 1]); k++) out.push(cell(t.children[0], data.children[0], k));
      return out;
    }
    case Type.FixedSizeList: {
      const n = t.listSize;
      const out = [];
      for (let k = j * n; k < (j + 1) * n; k++) out.push(cell(t.children[0], data.children[0], k));
      return out;
    }
    case Type.Struct: {
      const out = {};
      t.children.forEach((f, c) => { out[f.name] = cell(f, data.children[c], j); });
      return out;
    }
    case Type.Map: {
      const o = data.valueOffsets;
      const entries = data.children[0];
      const [kf, vf] = entries.type.children;
      const out = {};
      for (let k = o[j]; k < o[j + 1]; k++) {
        out[mapKey(cell(kf, entries.children[0], k))] = cell(vf, entries.children[1], k);
      }
      return out;
    }
    default:
      throw new Error(`read_ipc: no rendering for type ${t} (typeId ${t.typeId})`);
  }
}

function vecCell(field, vector, idx) {
  for (const d of vector.data) {
    if (idx < d.length) return cell(field, d, idx);
    idx -= d.length;
  }
  throw new Error('dictionary index out of range');
}

function describe(f) {
  const out = { name: f.name, type: String(f.type), nullable: f.nullable };
  if (f.metadata && f.metadata.size) out.metadata = Object.fromEntries(f.metadata);
  const kids = f.type.typeId === Type.Dictionary ? f.type.dictionary.children : f.type.children;
  if (kids && kids.length) out.children = kids.map(describe);
  return out;
}

function decode(bytes) {
  const reader = RecordBatchReader.from(bytes);
  reader.open();
  const fields = reader.schema.fields;
  const batches = [];
  const rows = [];
  for (const batch of reader) {
    batches.push(batch.numRows);
    const cols = batch.data.children;
    for (let i = 0; i < batch.numRows; i++) {
      const row = {};
      fields.forEach((f, c) => { row[f.name] = cell(f, cols[c], i); });
      rows.push(row);
    }
  }
  return { schema: fields.map(describe), batches, rows };
}

// One JSON line per input; a stream that fails to decode gives {"error": ...}
// on its line so one bad case does not hide the others.
const files = process.argv.length > 2 ? process.argv.slice(2) : [0];
for (const f of files) {
  let line;
  try {
    line = toJson(decode(readFileSync(f)));
  } catch (e) {
    line = JSON.stringify({ error: String(e && e.message ? e.message : e) });
  }
  process.stdout.write(line + '\n');
}
