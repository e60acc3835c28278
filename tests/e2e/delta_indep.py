"""An independent reading of a Delta table, for the tests: written here from
the protocol (PROTOCOL.md), sharing no code with vitrine's reader.

  log replay   JSON commits from version 0 (or the newest classic Parquet
               checkpoint, read with DuckDB, then the commits after it); a
               logical file is (path, deletion vector id), the newest action
               on it wins, adds are what remains
  vectors      Z85 (inline) or the vector file ('u': <prefix>/deletion_vector_
               <uuid>.bin, 'p': absolute path), the RoaringBitmapArray and its
               32-bit Roaring buckets decoded in Python
  rows         DuckDB read_parquet over each active file with file_row_number,
               minus the deleted positions, partition values added as text

indep_sql(table_dir) returns a statement creating view `indep` and the list
of (logical name, name in indep) for the schema's columns; compare_sql()
writes the multiset comparison against a served export.
"""
import base64
import json
import struct
import urllib.parse
from pathlib import Path

from conftest import sql

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"


def z85_decode(text):
    """Z85 is base 85 with another alphabet: map it onto Python's b85."""
    return base64.b85decode(text.translate(str.maketrans(Z85, B85)))


def roaring32(buf, pos):
    """One portable 32-bit Roaring bitmap at buf[pos:]: (values, end)."""
    cookie = struct.unpack_from("<I", buf, pos)[0]
    pos += 4
    if cookie & 0xFFFF == 12347:
        size = (cookie >> 16) + 1
        runs = buf[pos:pos + (size + 7) // 8]
        pos += (size + 7) // 8
    elif cookie == 12346:
        size = struct.unpack_from("<I", buf, pos)[0]
        pos += 4
        runs = bytes((size + 7) // 8)
    else:
        raise ValueError("not a Roaring bitmap")
    keys = []
    for i in range(size):
        key, card = struct.unpack_from("<HH", buf, pos + 4 * i)
        keys.append((key, card + 1))
    pos += 4 * size
    if cookie == 12346 or size >= 4:
        pos += 4 * size  # offsets
    values = []
    for i, (key, card) in enumerate(keys):
        base = key << 16
        if runs[i // 8] >> (i % 8) & 1:
            n = struct.unpack_from("<H", buf, pos)[0]
            pos += 2
            for _ in range(n):
                start, length = struct.unpack_from("<HH", buf, pos)
                pos += 4
                values.extend(base + v for v in range(start, start + length + 1))
        elif card > 4096:
            words = struct.unpack_from("<1024Q", buf, pos)
            pos += 8192
            for w, word in enumerate(words):
                for b in range(64):
                    if word >> b & 1:
                        values.append(base + w * 64 + b)
        else:
            values.extend(base + v for v in struct.unpack_from(f"<{card}H", buf, pos))
            pos += 2 * card
    return values, pos


def bitmap_array(buf):
    """Delta's RoaringBitmapArray (portable layout): the deleted positions."""
    magic, n = struct.unpack_from("<Iq", buf, 0)
    assert magic == 1681511377, magic
    pos, out = 12, []
    for _ in range(n):
        key = struct.unpack_from("<I", buf, pos)[0]
        values, pos = roaring32(buf, pos + 4)
        out.extend((key << 32) + v for v in values)
    return sorted(out)


def deleted_positions(table_dir, dv):
    size = dv["sizeInBytes"]
    if dv["storageType"] == "i":
        return bitmap_array(z85_decode(dv["pathOrInlineDv"])[:size])
    if dv["storageType"] == "u":
        ref = dv["pathOrInlineDv"]
        raw = z85_decode(ref[-20:])
        h = raw.hex()
        uuid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        prefix = ref[:-20]
        path = Path(table_dir) / prefix / f"deletion_vector_{uuid}.bin" if prefix else \
            Path(table_dir) / f"deletion_vector_{uuid}.bin"
    else:
        path = Path(urllib.parse.urlparse(dv["pathOrInlineDv"]).path)
    data = path.read_bytes()
    off = dv.get("offset") or 0
    stored = struct.unpack_from(">I", data, off)[0]
    assert stored == size, (stored, size)
    return bitmap_array(data[off + 4:off + 4 + size])


def replay(table_dir):
    """(active adds by path, last metaData) after the whole log."""
    log = Path(table_dir) / "_delta_log"
    commits = sorted(p for p in log.iterdir() if len(p.name) == 25 and p.name.endswith(".json"))
    files, meta, start = {}, None, 0
    if not (log / ("0" * 20 + ".json")).exists():
        cps = sorted(p for p in log.iterdir() if p.name.endswith(".checkpoint.parquet"))
        cp = cps[-1]
        start = int(cp.name[:20]) + 1
        for (line,) in sql(f"SELECT to_json(t)::VARCHAR FROM read_parquet('{cp}') t"):
            a = json.loads(line)
            if a.get("add"):
                files[(urllib.parse.unquote(a["add"]["path"]), dv_id(a["add"]))] = a["add"]
            if a.get("metaData"):
                meta = a["metaData"]
    for c in commits:
        if int(c.name[:20]) < start:
            continue
        for line in c.read_text().splitlines():
            if not line.strip():
                continue
            a = json.loads(line)
            if "add" in a:
                key = (urllib.parse.unquote(a["add"]["path"]), dv_id(a["add"]))
                files = {k: v for k, v in files.items() if k[0] != key[0]}  # newest add of a path
                files[key] = a["add"]
            elif "remove" in a:
                files.pop((urllib.parse.unquote(a["remove"]["path"]), dv_id(a["remove"])), None)
            elif "metaData" in a:
                meta = a["metaData"]
    return list(files.values()), meta


def dv_id(action):
    dv = action.get("deletionVector")
    if not dv:
        return None
    off = dv.get("offset")
    return dv["storageType"] + dv["pathOrInlineDv"] + (f"@{off}" if off is not None else "")


def lit(v):
    return "NULL" if v is None else "'" + str(v).replace("'", "''") + "'"


def indep_sql(table_dir):
    """CREATE VIEW indep ... and [(logical, physical)] for the schema's columns."""
    adds, meta = replay(table_dir)
    schema = json.loads(meta["schemaString"])
    mode = (meta.get("configuration") or {}).get("delta.columnMapping.mode", "none")
    cols = []
    for f in schema["fields"]:
        phys = f["metadata"].get("delta.columnMapping.physicalName") if mode != "none" else None
        cols.append((f["name"], phys or f["name"]))
    parts = {p.lower() for p in meta.get("partitionColumns", [])}
    selects = []
    for a in sorted(adds, key=lambda a: a["path"]):
        path = Path(table_dir) / urllib.parse.unquote(a["path"])
        pv = a.get("partitionValues") or {}
        extra = []
        for name, phys in cols:
            if name.lower() in parts:
                v = pv.get(phys, pv.get(name))
                extra.append(f"{lit(v if v != '' else None)} AS \"{phys}\"")
        where = ""
        if a.get("deletionVector"):
            gone = deleted_positions(table_dir, a["deletionVector"])
            assert len(gone) == a["deletionVector"]["cardinality"]
            where = " WHERE file_row_number NOT IN (" + ",".join(map(str, gone)) + ")"
        star = "* EXCLUDE (file_row_number)"
        selects.append(f"(SELECT {star}{''.join(', ' + e for e in extra)} FROM (SELECT * FROM "
                       f"read_parquet({lit(str(path))}, file_row_number = true, "
                       f"hive_partitioning = false){where}))")
    return "CREATE VIEW indep AS " + " UNION ALL BY NAME ".join(selects), cols


def compare_sql(export, served_cols, cols, indep_cols, detail=False):
    """A SELECT list comparing one export with table indep as multisets of
    rows (each value cast to the served type, then to text): the sums of the
    rows' hashes and the row counts, (mine, indep, rows mine, rows indep);
    detail: (only in the export, only in indep) by EXCEPT ALL instead.
    served_cols: [(name, type)] of the served schema; cols: (logical,
    physical); indep_cols: {lowercase name: type} of table indep."""
    phys = dict(cols)
    mine, ind = [], []
    for name, typ in served_cols:
        mine.append(f'CAST("{name}" AS VARCHAR)')
        p = phys.get(name, name)
        if p.lower() in indep_cols:
            if typ == "BLOB" and indep_cols[p.lower()] == "VARCHAR":
                ind.append(f'CAST(encode("{p}") AS VARCHAR)')  # partition text
            else:
                ind.append(f'CAST(CAST("{p}" AS {typ}) AS VARCHAR)')
        else:
            ind.append("NULL::VARCHAR")
    m, i = ", ".join(mine), ", ".join(ind)
    src = f"read_parquet({lit(str(export))})"
    if detail:
        return (f"(SELECT count(*) FROM (SELECT {m} FROM {src} EXCEPT ALL SELECT {i} FROM indep)), "
                f"(SELECT count(*) FROM (SELECT {i} FROM indep EXCEPT ALL SELECT {m} FROM {src}))")
    hm, hi = f"hash({m}, 0)", f"hash({i}, 0)"
    return (f"(SELECT sum({hm})::HUGEINT FROM {src}), (SELECT sum({hi})::HUGEINT FROM indep), "
            f"(SELECT count(*) FROM {src}), (SELECT count(*) FROM indep)")


# ---- variants: the binary encoding decoded in Python, rows compared as JSON ----

def _le(b, n):
    return int.from_bytes(b[:n], "little")


def variant_value(meta, v):
    """A Variant (metadata, value bytes) as a Python value (the JSON vitrine
    serves for it: numbers, strings, objects, arrays)."""
    osz = (meta[0] >> 6) + 1
    nd = _le(meta[1:], osz)
    offs = [_le(meta[1 + osz + i * osz:], osz) for i in range(nd + 1)]
    base = 1 + osz + (nd + 1) * osz
    keys = [meta[base + offs[i]:base + offs[i + 1]].decode() for i in range(nd)]

    def val(b):
        basic, h = b[0] & 3, b[0] >> 2
        if basic == 1:
            return b[1:1 + h].decode()
        if basic == 0:
            d = b[1:]
            if h == 0:
                return None
            if h in (1, 2):
                return h == 1
            if h in (3, 4, 5, 6):
                n = {3: 1, 4: 2, 5: 4, 6: 8}[h]
                return int.from_bytes(d[:n], "little", signed=True)
            if h == 7:
                return struct.unpack("<d", d[:8])[0]
            if h == 14:
                return struct.unpack("<f", d[:4])[0]
            if h in (8, 9, 10):
                n = {8: 4, 9: 8, 10: 16}[h]
                return int.from_bytes(d[1:1 + n], "little", signed=True) / 10 ** d[0]
            if h == 16:
                return d[4:4 + _le(d, 4)].decode()
            raise ValueError(f"variant primitive {h} not expected in the corpus")
        large = (h >> (4 if basic == 2 else 2)) & 1
        fo = (h & 3) + 1
        fi = ((h >> 2) & 3) + 1 if basic == 2 else 0
        cnt = 4 if large else 1
        n = _le(b[1:], cnt)
        pos = 1 + cnt
        ids = [_le(b[pos + i * fi:], fi) for i in range(n)]
        pos += n * fi
        off = [_le(b[pos + i * fo:], fo) for i in range(n + 1)]
        start = pos + (n + 1) * fo
        items = [val(b[start + off[i]:]) for i in range(n)]
        return {keys[ids[i]]: items[i] for i in range(n)} if basic == 2 else items

    return val(v)


def _blob(text):
    """DuckDB's text form of a BLOB (\\xNN escapes) -> bytes."""
    out, i = bytearray(), 0
    while i < len(text):
        if text.startswith("\\x", i):
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        else:
            out.append(ord(text[i]))
            i += 1
    return bytes(out)


def decode_variants(x):
    """Replaces every {metadata, value} group (as to_json writes it) by its value."""
    if isinstance(x, dict):
        if set(x) == {"metadata", "value"}:
            return None if x["value"] is None else variant_value(_blob(x["metadata"]),
                                                                  _blob(x["value"]))
        return {k: decode_variants(v) for k, v in x.items()}
    if isinstance(x, list):
        return [decode_variants(v) for v in x]
    return x


def rows_as_json(db, query):
    return [json.loads(r[0]) for r in sql("SET TimeZone = 'UTC'",
                                          f"SELECT to_json(t)::VARCHAR FROM ({query}) t", db=db)]


def canonical(rows):
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def variant_rows_differ(db, export, served_cols, cols):
    """For tables with variant columns: the export's rows against indep's
    with each variant decoded here, as JSON; the rows that differ (few)."""
    phys = dict(cols)
    mine = canonical(rows_as_json(db, f"SELECT * FROM read_parquet({lit(str(export))})"))
    names = ", ".join(f'"{phys.get(n, n)}" AS "{n}"' for n, _ in served_cols)
    indep = canonical(decode_variants(r) for r in rows_as_json(db, f"SELECT {names} FROM indep"))
    return [r for r in mine if r not in indep][:3], [r for r in indep if r not in mine][:3], \
        len(mine), len(indep)
