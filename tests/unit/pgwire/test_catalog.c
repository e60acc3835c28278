/* pgwire's catalog (src/pgwire/catalog.c) through the SQL gate's PostgreSQL
 * names (the pgwire dialect) on a real DuckDB: the exact statements psql 15 sends
 * for \dt, \d name, \l, \dn, and common driver type lookups, normalized
 * (pgw_normalize), checked and mapped by the gate, then run; answers are
 * checked against what PostgreSQL says for the same table. Also what the
 * gate still refuses in this mode (other schemas, unknown catalog tables,
 * the internal names themselves). */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgwire/pgwire.h"
#include "sql/sql.h"
#include "testlib.h"

static duckdb_database db;
static duckdb_connection con;

static bool is_dataset(void *ctx, const char *name)
{
    (void)ctx;
    return !strcmp(name, "trips") || !strcmp(name, "stations");
}

static void setup(void)
{
    if (db)
        return;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    duckdb_result r;
    duckdb_query(con, "CREATE TABLE g_trips AS SELECT range::INTEGER AS id, 'x' || range AS "
                      "name, (range * 1.5)::DECIMAL(10,2) AS fare, TIMESTAMP '2024-01-01' AS ts, "
                      "[1, 2]::BIGINT[] AS tags, {'a': 1} AS s FROM range(10)", &r);
    duckdb_destroy_result(&r);
    duckdb_query(con, "CREATE TABLE g_stations AS SELECT range AS id FROM range(3)", &r);
    duckdb_destroy_result(&r);
    /* What exec makes on a worker connection for a statement reading them. */
    duckdb_query(con, "CREATE TEMP VIEW trips AS SELECT * FROM g_trips", &r);
    duckdb_destroy_result(&r);
    duckdb_query(con, "CREATE TEMP VIEW stations AS SELECT * FROM g_stations", &r);
    duckdb_destroy_result(&r);
}

static enum vt_err sync(void)
{
    static const bool nullable[] = {false, true, true, true, true, true};
    struct pgw_cat_table t[] = {
        {"trips", "g_trips", "gen1", 10, 20000, nullable, 6, "all the trips"},
        {"stations", "g_stations", "gen1", 3, -1, NULL, 0, NULL},
    };
    struct pgw_cat_setting s[] = {
        {"vt.user", "vitrine", NULL}, {"vt.database", "analytics", NULL},
        {"vt.version", "PostgreSQL 15.0 (vitrine)", NULL}, {"vt.pid", "4242", NULL},
        {"server_version", "15.0", "version"}, {"DateStyle", "ISO, MDY", NULL},
        {"application_name", "psql", NULL},
    };
    struct vt_error err = {0};
    enum vt_err rc = pgw_catalog_sync(con, t, 2, s, sizeof s / sizeof s[0], "vitrine",
                                      "analytics", &err);
    if (rc)
        fprintf(stderr, "  sync: %s\n", vt_error_message(&err));
    return rc;
}

/* Runs sql as pgwire would: normalize, gate with PostgreSQL names, run the
 * mapped text. Returns the rows as "a|b|c" lines (NULL as "<null>"). */
static char *run_pg(const char *sql, enum vt_err *out_code, char *msg, size_t msglen)
{
    setup();
    char *norm = pgw_normalize(sql, strlen(sql));
    struct sql_gate_options o = {.allow_params = true, .dialect = &pgw_dialect};
    struct sql_checked chk;
    struct vt_error err = {0};
    *out_code = sql_gate_check_opts(con, norm ? norm : sql, &o, is_dataset, NULL, &chk, &err);
    if (*out_code) {
        snprintf(msg, msglen, "%s", vt_error_message(&err));
        free(norm);
        return NULL;
    }
    if (chk.reads_catalog && sync() != VT_ERR_OK) {
        *out_code = VT_ERR_INTERNAL;
        free(norm);
        sql_checked_release(&chk);
        return NULL;
    }
    const char *text = chk.rewritten ? chk.rewritten : norm ? norm : sql;
    duckdb_result res;
    char *out = NULL;
    if (duckdb_query(con, text, &res) != DuckDBSuccess) {
        snprintf(msg, msglen, "%s\n  (ran: %s)", duckdb_result_error(&res), text);
        *out_code = VT_ERR_QUERY_FAILED;
    } else {
        size_t cap = 1 << 16, len = 0;
        out = calloc(1, cap);
        for (idx_t r = 0; r < duckdb_row_count(&res); r++) {
            for (idx_t c = 0; c < duckdb_column_count(&res); c++) {
                char *v = duckdb_value_is_null(&res, c, r) ? NULL
                                                           : duckdb_value_varchar(&res, c, r);
                len += (size_t)snprintf(out + len, cap - len, "%s%s", c ? "|" : "",
                                        v ? v : "<null>");
                duckdb_free(v);
            }
            len += (size_t)snprintf(out + len, cap - len, "\n");
        }
    }
    duckdb_destroy_result(&res);
    sql_checked_release(&chk);
    free(norm);
    return out;
}

static char *expect_rows(const char *sql)
{
    enum vt_err code;
    char msg[2048] = "";
    char *rows = run_pg(sql, &code, msg, sizeof msg);
    if (code != VT_ERR_OK) {
        fprintf(stderr, "  failed: %s\n  %s\n", sql, msg);
        tl_failed_checks++;
    }
    return rows;
}

/* psql 15's \dt */
static const char q_dt[] =
    "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' "
    "THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN "
    "'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign "
    "table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "
    "\"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\"\nFROM pg_catalog.pg_class "
    "c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n     LEFT JOIN "
    "pg_catalog.pg_am am ON am.oid = c.relam\nWHERE c.relkind IN ('r','p','')\n      AND "
    "n.nspname <> 'pg_catalog'\n      AND n.nspname !~ '^pg_toast'\n      AND n.nspname <> "
    "'information_schema'\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 1,2;";

TEST(psql_dt_lists_the_datasets)
{
    char *rows = expect_rows(q_dt);
    CHECK_EQ_STR(rows, "public|stations|table|vitrine\npublic|trips|table|vitrine\n");
    free(rows);
}

TEST(psql_d_name_describes_the_columns)
{
    char *rows = expect_rows(
        "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM pg_catalog.pg_class c\n     LEFT JOIN "
        "pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relname "
        "OPERATOR(pg_catalog.~) '^(trips)$' COLLATE pg_catalog.default\n  AND "
        "pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;");
    CHECK_CONTAINS(rows, "|public|trips\n");
    char oid[32] = "";
    if (rows)
        snprintf(oid, sizeof oid, "%.*s", (int)strcspn(rows, "|"), rows);
    free(rows);
    char q[4096];
    snprintf(q, sizeof q,
             "SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, "
             "c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, "
             "'', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE "
             "c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, "
             "c.relreplident, am.amname\nFROM pg_catalog.pg_class c\n LEFT JOIN "
             "pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)\nLEFT JOIN pg_catalog.pg_am "
             "am ON (c.relam = am.oid)\nWHERE c.oid = '%s';",
             oid);
    rows = expect_rows(q);
    CHECK_EQ_STR(rows, "0|r|false|false|false|false|false|false|false||0||p|d|heap\n");
    free(rows);
    snprintf(q, sizeof q,
             "SELECT a.attname,\n  pg_catalog.format_type(a.atttypid, a.atttypmod),\n  (SELECT "
             "pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)\n   FROM pg_catalog.pg_attrdef d\n "
             "  WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),\n  "
             "a.attnotnull,\n  (SELECT c.collname FROM pg_catalog.pg_collation c, "
             "pg_catalog.pg_type t\n   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND "
             "a.attcollation <> t.typcollation) AS attcollation,\n  a.attidentity,\n  "
             "a.attgenerated\nFROM pg_catalog.pg_attribute a\nWHERE a.attrelid = '%s' AND "
             "a.attnum > 0 AND NOT a.attisdropped\nORDER BY a.attnum;",
             oid);
    rows = expect_rows(q);
    CHECK_EQ_STR(rows, "id|integer|<null>|true|<null>||\n"
                       "name|text|<null>|false|<null>||\n"
                       "fare|numeric(10,2)|<null>|false|<null>||\n"
                       "ts|timestamp without time zone|<null>|false|<null>||\n"
                       "tags|bigint[]|<null>|false|<null>||\n"
                       "s|json|<null>|false|<null>||\n");
    free(rows);
    /* The rest of \d: policies, statistics, publications, inheritance. */
    static const char *const more[] = {
        "SELECT pol.polname, pol.polpermissive,\n  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE "
        "pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = "
        "any (pol.polroles) order by 1),',') END,\n  pg_catalog.pg_get_expr(pol.polqual, "
        "pol.polrelid),\n  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),\n  CASE "
        "pol.polcmd\n    WHEN 'r' THEN 'SELECT'\n    WHEN 'a' THEN 'INSERT'\n    WHEN 'w' THEN "
        "'UPDATE'\n    WHEN 'd' THEN 'DELETE'\n    END AS cmd\nFROM pg_catalog.pg_policy pol\n"
        "WHERE pol.polrelid = '%s' ORDER BY 1;",
        "SELECT oid, stxrelid::pg_catalog.regclass, "
        "stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,\n"
        "pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,\n  'd' = any(stxkind) AS "
        "ndist_enabled,\n  'f' = any(stxkind) AS deps_enabled,\n  'm' = any(stxkind) AS "
        "mcv_enabled,\nstxstattarget\nFROM pg_catalog.pg_statistic_ext\nWHERE stxrelid = '%s'\n"
        "ORDER BY nsp, stxname;",
        "SELECT pubname\n     , NULL\n     , NULL\nFROM pg_catalog.pg_publication p\n     JOIN "
        "pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid\n     JOIN "
        "pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid\nWHERE pc.oid ='%s' and "
        "pg_catalog.pg_relation_is_publishable('%s')\nUNION\nSELECT pubname\n     , "
        "pg_get_expr(pr.prqual, c.oid)\n     , (CASE WHEN pr.prattrs IS NOT NULL THEN\n       "
        "  (SELECT string_agg(attname, ', ')\n           FROM pg_catalog.generate_series(0, "
        "pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,\n                "
        "pg_catalog.pg_attribute\n          WHERE attrelid = pr.prrelid AND attnum = "
        "prattrs[s])\n        ELSE NULL END) FROM pg_catalog.pg_publication p\n     JOIN "
        "pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid\n     JOIN pg_catalog.pg_class "
        "c ON c.oid = pr.prrelid\nWHERE pr.prrelid = '%s'\nUNION\nSELECT pubname\n     , NULL\n "
        "    , NULL\nFROM pg_catalog.pg_publication p\nWHERE p.puballtables AND "
        "pg_catalog.pg_relation_is_publishable('%s')\nORDER BY 1;",
        "SELECT c.oid::pg_catalog.regclass\nFROM pg_catalog.pg_class c, pg_catalog.pg_inherits i\n"
        "WHERE c.oid = i.inhparent AND i.inhrelid = '%s'\n  AND c.relkind != 'p' AND c.relkind "
        "!= 'I'\nORDER BY inhseqno;",
        "SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, "
        "pg_catalog.pg_get_expr(c.relpartbound, c.oid)\nFROM pg_catalog.pg_class c, "
        "pg_catalog.pg_inherits i\nWHERE c.oid = i.inhrelid AND i.inhparent = '%s'\nORDER BY "
        "pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', "
        "c.oid::pg_catalog.regclass::pg_catalog.text;",
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        snprintf(q, sizeof q, more[i], oid, oid, oid, oid);
        rows = expect_rows(q);
        CHECK_EQ_STR(rows, "");
        free(rows);
    }
}

TEST(psql_l_and_dn)
{
    char *rows = expect_rows(
        "SELECT d.datname as \"Name\",\n       pg_catalog.pg_get_userbyid(d.datdba) as "
        "\"Owner\",\n       pg_catalog.pg_encoding_to_char(d.encoding) as \"Encoding\",\n     "
        "  d.datcollate as \"Collate\",\n       d.datctype as \"Ctype\",\n       "
        "d.daticulocale as \"ICU Locale\",\n       CASE d.datlocprovider WHEN 'c' THEN 'libc' "
        "WHEN 'i' THEN 'icu' END AS \"Locale Provider\",\n       "
        "pg_catalog.array_to_string(d.datacl, E'\\n') AS \"Access privileges\"\nFROM "
        "pg_catalog.pg_database d\nORDER BY 1;");
    CHECK_EQ_STR(rows, "analytics|vitrine|UTF8|C|C|<null>|libc|<null>\n");
    free(rows);
    rows = expect_rows("SELECT n.nspname AS \"Name\",\n  pg_catalog.pg_get_userbyid(n.nspowner) "
                       "AS \"Owner\"\nFROM pg_catalog.pg_namespace n\nWHERE n.nspname !~ '^pg_' "
                       "AND n.nspname <> 'information_schema'\nORDER BY 1;");
    CHECK_EQ_STR(rows, "public|vitrine\n");
    free(rows);
}

TEST(type_lookups_and_session_functions)
{
    /* psycopg 3's TypeInfo.fetch */
    char *rows = expect_rows("SELECT typname AS name, oid, typarray AS array_oid, "
                             "oid::regtype::text AS regtype, typdelim AS delimiter FROM pg_type "
                             "t WHERE t.oid = 'int4'::regtype ORDER BY t.oid");
    CHECK_EQ_STR(rows, "int4|23|1007|integer|,\n");
    free(rows);
    rows = expect_rows("SELECT oid, typname, typelem FROM pg_catalog.pg_type WHERE typname = "
                       "'_text'");
    CHECK_EQ_STR(rows, "1009|_text|25\n");
    free(rows);
    rows = expect_rows("SELECT version(), current_setting('server_version'), "
                       "current_database(), current_user, current_schema(), pg_backend_pid()");
    CHECK_EQ_STR(rows, "PostgreSQL 15.0 (vitrine)|15.0|analytics|vitrine|public|4242\n");
    free(rows);
    rows = expect_rows("SELECT 'trips'::regclass = (SELECT oid FROM pg_class WHERE relname = "
                       "'trips'), 'public.trips'::regclass::oid > 16384");
    CHECK_EQ_STR(rows, "true|true\n");
    free(rows);
    rows = expect_rows("SELECT attname, atttypid, attnum FROM pg_attribute WHERE attrelid = "
                       "'stations'::regclass");
    CHECK_EQ_STR(rows, "id|20|1\n");
    free(rows);
    rows = expect_rows("SELECT table_name, column_name, data_type, is_nullable FROM "
                       "information_schema.columns WHERE table_name = 'trips' ORDER BY "
                       "ordinal_position LIMIT 3");
    CHECK_EQ_STR(rows, "trips|id|integer|NO\ntrips|name|text|YES\ntrips|fare|numeric|YES\n");
    free(rows);
    rows = expect_rows("SELECT table_schema, table_name FROM information_schema.tables ORDER BY 2");
    CHECK_EQ_STR(rows, "public|stations\npublic|trips\n");
    free(rows);
    rows = expect_rows("SELECT obj_description('trips'::regclass, 'pg_class')");
    CHECK_EQ_STR(rows, "all the trips\n");
    free(rows);
    /* a catalog read and a dataset in one statement */
    rows = expect_rows("SELECT count(*), (SELECT relname FROM pg_class WHERE relname = 'trips') "
                       "FROM public.trips");
    CHECK_EQ_STR(rows, "10|trips\n");
    free(rows);
    /* sizes: the source bytes (unknown is 0), in 8 kB pages in pg_class */
    rows = expect_rows("SELECT relname, relpages, pg_relation_size(oid), "
                       "pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class ORDER BY 1");
    CHECK_EQ_STR(rows, "stations|0|0|0 bytes\ntrips|3|20000|20 kB\n");
    free(rows);
    rows = expect_rows("SELECT pg_typeof(id), pg_typeof(1.5), pg_typeof([1]) FROM trips "
                       "LIMIT 1");
    CHECK_EQ_STR(rows, "integer|numeric|integer[]\n");
    free(rows);
}

/* What pgjdbc (DBeaver, Metabase) sends for DatabaseMetaData.getTables,
 * getColumns and its type cache. */
TEST(jdbc_metadata_queries)
{
    char *rows = expect_rows(
        "SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE "
        "n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN "
        "n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN "
        "'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   "
        "ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN "
        "'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE "
        "c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN "
        "'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN "
        "'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN "
        "'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then "
        "'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN "
        "'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  "
        "END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as "
        "TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  "
        "FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN "
        "pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = "
        "'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND c.relname LIKE '%' ORDER BY "
        "TABLE_TYPE,TABLE_SCHEM,TABLE_NAME");
    CHECK_EQ_STR(rows, "<null>|public|stations|TABLE|<null>|||||\n"
                       "<null>|public|trips|TABLE|all the trips|||||\n");
    free(rows);
    rows = expect_rows(
        "SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR "
        "(t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,t.typtypmod,"
        "row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, "
        "nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated,"
        "pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,"
        "t.typtype  FROM pg_catalog.pg_namespace n  JOIN pg_catalog.pg_class c ON "
        "(c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid)  JOIN "
        "pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN pg_catalog.pg_attrdef def ON "
        "(a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT JOIN pg_catalog.pg_description "
        "dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  LEFT JOIN pg_catalog.pg_class "
        "dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  LEFT JOIN "
        "pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog')  "
        "WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped  AND "
        "n.nspname LIKE 'public' AND c.relname LIKE 'trips') c WHERE true  ORDER BY "
        "nspname,c.relname,attnum");
    CHECK_CONTAINS(rows, "public|trips|id|23|true|-1|4|-1|1|<null>|<null>|<null>|<null>|0|b\n");
    CHECK_CONTAINS(rows, "public|trips|fare|1700|false|655366|-1|-1|3|");
    free(rows);
    rows = expect_rows(
        "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, "
        "pg_type.oid   FROM pg_catalog.pg_type   LEFT JOIN (select ns.oid as nspoid, "
        "ns.nspname, r.r           from pg_namespace as ns           join ( select s.r, "
        "(current_schemas(false))[s.r] as nspname                    from generate_series(1, "
        "array_upper(current_schemas(false), 1)) as s(r) ) as r          using ( nspname )      "
        "  ) as sp     ON sp.nspoid = typnamespace  WHERE pg_type.oid IN (23, 1007)  ORDER BY "
        "sp.r, pg_type.oid DESC");
    CHECK_EQ_STR(rows, "true|b|_int4|1007\nfalse|b|int4|23\n");
    free(rows);
}

TEST(pg_mode_still_refuses)
{
    static const struct {
        const char *sql;
        enum vt_err code;
    } bad[] = {
        {"SELECT * FROM pg_catalog.pg_shadow", VT_ERR_SQL_UNKNOWN_TABLE},
        {"SELECT * FROM other.trips", VT_ERR_SQL_UNKNOWN_TABLE},
        {"SELECT * FROM memory.main.trips", VT_ERR_SQL_UNKNOWN_TABLE},
        {"SELECT * FROM \"vt:pg_class\"", VT_ERR_SQL_UNKNOWN_TABLE},
        {"SELECT \"vt:version\"()", VT_ERR_SQL_FORBIDDEN_FUNCTION},
        {"SELECT * FROM information_schema.no_such_view", VT_ERR_SQL_UNKNOWN_TABLE},
        {"SELECT * FROM pg_catalog.pg_stat_statements", VT_ERR_SQL_UNKNOWN_TABLE},
        {"SELECT pg_catalog.read_csv('/etc/passwd')", VT_ERR_SQL_FORBIDDEN_FUNCTION},
        {"SELECT * FROM read_csv('/etc/passwd')", VT_ERR_SQL_FORBIDDEN_FUNCTION},
        {"SELECT pg_read_file('/etc/passwd')", VT_ERR_SQL_FORBIDDEN_FUNCTION},
        {"SELECT pg_sleep(10)", VT_ERR_SQL_FORBIDDEN_FUNCTION},
        {"SELECT * FROM \"vt:pg_get_keywords\"", VT_ERR_SQL_UNKNOWN_TABLE},
        {"SELECT * FROM pg_get_keywords('x')", VT_ERR_SQL_SYNTAX},
        {"SELECT * FROM read_csv_auto('/etc/passwd') s", VT_ERR_SQL_FORBIDDEN_FUNCTION},
        {"SET search_path = x", VT_ERR_SQL_NOT_READ_ONLY},
        {"DELETE FROM trips", VT_ERR_SQL_NOT_READ_ONLY},
        {"SELECT * FROM nope", VT_ERR_SQL_UNKNOWN_TABLE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        enum vt_err code;
        char msg[2048] = "";
        char *rows = run_pg(bad[i].sql, &code, msg, sizeof msg);
        if (code != bad[i].code)
            fprintf(stderr, "  %s: got %d (%s), want %d\n", bad[i].sql, code, msg, bad[i].code);
        CHECK_EQ_INT(code, bad[i].code);
        free(rows);
    }
}

TEST(params_and_big_integers_survive_the_mapping)
{
    /* A statement mapped for public.X keeps exact big constants. */
    char *rows = expect_rows("SELECT 18446744073709551615::UBIGINT AS big, "
                             "170141183460469231731687303715884105727::HUGEINT AS huge, count(*) "
                             "FROM public.trips");
    CHECK_EQ_STR(rows, "18446744073709551615|170141183460469231731687303715884105727|10\n");
    free(rows);
    setup();
    struct sql_gate_options o = {.allow_params = true, .dialect = &pgw_dialect};
    struct sql_checked chk;
    struct vt_error err = {0};
    CHECK_EQ_INT(sql_gate_check_opts(con, "SELECT * FROM public.trips WHERE id = $1", &o,
                                     is_dataset, NULL, &chk, &err),
                 VT_ERR_OK);
    CHECK_CONTAINS(chk.rewritten, "$1");
    CHECK(!chk.reads_catalog);
    CHECK_EQ_INT(chk.n_depends_on, 1);
    sql_checked_release(&chk);
    /* without options parameters stay refused */
    CHECK_EQ_INT(sql_gate_check_opts(con, "SELECT $1", NULL, is_dataset, NULL, &chk, &err),
                 VT_ERR_SQL_NOT_READ_ONLY);
}

int main(void)
{
    static const struct tl_case cases[] = {
        TEST_CASE(psql_dt_lists_the_datasets),
        TEST_CASE(psql_d_name_describes_the_columns),
        TEST_CASE(psql_l_and_dn),
        TEST_CASE(type_lookups_and_session_functions),
        TEST_CASE(jdbc_metadata_queries),
        TEST_CASE(pg_mode_still_refuses),
        TEST_CASE(params_and_big_integers_survive_the_mapping),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    sql_thread_release(); /* the gate's statements, before their connection goes */
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
