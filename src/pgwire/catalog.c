/*
 * PostgreSQL's catalog, as much of it as clients read (psql's \dt, \d, \l,
 * \dn; type lookups by psycopg, JDBC and BI tools), answering truthfully
 * about the datasets: every published dataset is a table of schema public,
 * its columns with the PostgreSQL types the DataRow encoder sends for them.
 *
 * Why not DuckDB's own pg_catalog: its views read duckdb_tables() and
 * duckdb_columns() of the whole database, so they list the generations'
 * internal databases and views, not the datasets; its type OIDs are DuckDB's
 * (pg_attribute.atttypid does not match pg_type.oid), attnum starts at 0, and
 * pg_get_userbyid, pg_collation, pg_policy, pg_inherits and the other tables
 * psql's \d reads do not exist. So the catalog is ours: temporary tables and
 * macros on each worker connection, named "vt:<name>" (a dataset name cannot
 * hold a colon, so nothing collides), filled from the datasets pinned when a
 * catalog statement starts and refreshed only when a generation changed. The
 * SQL gate maps PostgreSQL's names onto them (dialect.c): pg_class and
 * pg_catalog.pg_class read "vt:pg_class" AS pg_class; format_type(...) calls
 * "vt:format_type"(...); 'trips'::regclass calls "vt:regclass_in"('trips').
 * Catalog tables this file does not define are unknown relations (42P01).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "pgwire/pgwire.h"
#include "util/strbuf.h"

#define OID_PG_CATALOG 11
#define OID_PUBLIC 2200
#define OID_INFORMATION_SCHEMA 13000
#define OID_OWNER 10
#define OID_DATABASE 16384
#define OID_FIRST_TABLE 16385

/* ------------------------------------------------------------ the names */

static const char *const relations[] = {
    "pg_am", "pg_attrdef", "pg_attribute", "pg_class", "pg_collation", "pg_constraint",
    "pg_database", "pg_depend", "pg_description", "pg_enum", "pg_extension", "pg_index",
    "pg_inherits", "pg_namespace", "pg_policy", "pg_proc", "pg_publication",
    "pg_publication_namespace", "pg_publication_rel", "pg_range", "pg_roles", "pg_user",
    "pg_settings", "pg_statistic_ext", "pg_tables", "pg_tablespace", "pg_trigger", "pg_type",
    "pg_views", "pg_matviews", "pg_sequences", "pg_rewrite", "pg_partitioned_table",
    "pg_foreign_table", "pg_event_trigger", "pg_stat_activity", "pg_language", "pg_indexes",
    NULL,
};

static const char *const info_relations[] = {
    "tables", "columns", "schemata", "views", "table_constraints", "key_column_usage",
    "routines", "referential_constraints", "check_constraints", NULL,
};

/* The names handed out: "vt:" + name, or "vt:is_" + name for
 * information_schema. Static storage, built once per name list. */
static const char *lookup(const char *const *list, const char *name, const char *prefix)
{
    static char names[2][64][48];
    int which = list == relations ? 0 : 1;
    for (size_t i = 0; list[i]; i++) {
        if (!strcmp(list[i], name)) {
            char *slot = names[which][i];
            if (!slot[0])
                snprintf(slot, sizeof names[0][0], "%s%s", prefix, list[i]);
            return slot;
        }
    }
    return NULL;
}

const char *pgw_catalog_relation(const char *schema, const char *name)
{
    if (!strcmp(schema, "information_schema"))
        return lookup(info_relations, name, "vt:is_");
    return lookup(relations, name, "vt:");
}

/* Catalog functions: PostgreSQL name -> ours. Functions DuckDB has with the
 * PostgreSQL meaning (array_to_string, pg_typeof, ...) stay on the gate's
 * allowlist instead. */
static const char *const functions[][2] = {
    {"version", "vt:version"},
    {"current_setting", "vt:current_setting"},
    {"current_database", "vt:current_database"},
    {"current_catalog", "vt:current_database"},
    {"current_schema", "vt:current_schema"},
    {"current_schemas", "vt:current_schemas"},
    {"current_user", "vt:current_user"},
    {"session_user", "vt:current_user"},
    {"user", "vt:current_user"},
    {"current_role", "vt:current_user"},
    {"pg_get_userbyid", "vt:pg_get_userbyid"},
    {"pg_table_is_visible", "vt:visible"},
    {"pg_type_is_visible", "vt:visible"},
    {"pg_function_is_visible", "vt:visible"},
    {"format_type", "vt:format_type"},
    {"pg_get_expr", "vt:null2"},
    {"pg_get_constraintdef", "vt:null2"},
    {"pg_get_indexdef", "vt:null2"},
    {"pg_get_viewdef", "vt:null2"},
    {"pg_get_triggerdef", "vt:null2"},
    {"pg_get_ruledef", "vt:null2"},
    {"pg_get_partkeydef", "vt:null2"},
    {"pg_get_statisticsobjdef_columns", "vt:null2"},
    {"pg_tablespace_location", "vt:null2"},
    {"obj_description", "vt:obj_description"},
    {"col_description", "vt:null2"},
    {"shobj_description", "vt:null2"},
    {"pg_encoding_to_char", "vt:pg_encoding_to_char"},
    {"has_table_privilege", "vt:has_privilege"},
    {"has_schema_privilege", "vt:has_privilege"},
    {"has_database_privilege", "vt:has_privilege"},
    {"has_column_privilege", "vt:has_privilege"},
    {"has_any_column_privilege", "vt:has_privilege"},
    {"pg_has_role", "vt:has_privilege"},
    {"pg_relation_is_publishable", "vt:false1"},
    {"pg_is_in_recovery", "vt:false0"},
    {"pg_backend_pid", "vt:pg_backend_pid"},
    {"array_upper", "vt:array_upper"},
    {"array_lower", "vt:array_lower"},
    {"to_regclass", "vt:to_regclass"},
    {"to_regtype", "vt:to_regtype"},
    {"to_regnamespace", "vt:to_regnamespace"},
    {"pg_relation_size", "vt:null2"},
    {"pg_total_relation_size", "vt:null2"},
    {"pg_table_size", "vt:null2"},
    {"pg_indexes_size", "vt:null2"},
    {"pg_postmaster_start_time", "vt:pg_postmaster_start_time"},
    {"quote_ident", "vt:quote_ident"},
    {"unnest", "unnest"}, /* x = ANY(array): DuckDB's plan calls it as a scalar */
    /* PostgreSQL's regular-expression operators match anywhere in the
     * string; DuckDB's parser makes `~` a full match. */
    {"regexp_full_match", "regexp_matches"},
    {"~*", "vt:imatch"},
    {"!~*", "vt:inotmatch"},
    {NULL, NULL},
};

const char *pgw_catalog_function(const char *name)
{
    for (size_t i = 0; functions[i][0]; i++)
        if (!strcmp(functions[i][0], name))
            return functions[i][1];
    return NULL;
}

/* Casts to types DuckDB does not have: type, the function for a string
 * going in (a constant or a parameter: the name is looked up, the OID comes
 * out), the function for any other value (an OID shows as its name), as
 * PostgreSQL's reg* types read and print. */
static const char *const casts[][3] = {
    {"regclass", "vt:regclass_in", "vt:regclass_out"},
    {"regtype", "vt:regtype_in", "vt:regtype_out"},
    {"regnamespace", "vt:regnamespace_in", "vt:regnamespace_out"},
    {"regrole", "vt:regrole_in", "vt:regrole_out"},
    {"regproc", "vt:regproc_in", "vt:regproc_out"},
    {"regprocedure", "vt:regproc_in", "vt:regproc_out"},
    {"regoper", "vt:regproc_in", "vt:regproc_out"},
    {"name", "vt:text", "vt:text"},
    {"char", "vt:text", "vt:text"},
    {"bpchar", "vt:text", "vt:text"},
    {"int2vector", "vt:text", "vt:text"},
    {"oidvector", "vt:text", "vt:text"},
    {"regconfig", "vt:text", "vt:text"},
    {"xid", "vt:int8", "vt:int8"},
    {"cid", "vt:int8", "vt:int8"},
    {NULL, NULL, NULL},
};

const char *pgw_catalog_cast(const char *type_name, bool input)
{
    for (size_t i = 0; casts[i][0]; i++)
        if (!strcmp(casts[i][0], type_name))
            return casts[i][input ? 1 : 2];
    return NULL;
}

/* ------------------------------------------------------------ the tables */

/* Created once per worker connection. Column lists are PostgreSQL 15's
 * (every column psql and the common drivers read); oid columns are BIGINT. */
static const char catalog_ddl[] =
    "CREATE TEMP TABLE \"vt:settings\"(name VARCHAR, display VARCHAR, setting VARCHAR, "
    "  description VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_namespace\"(oid BIGINT, nspname VARCHAR, nspowner BIGINT, "
    "  nspacl VARCHAR[]);\n"
    "INSERT INTO \"vt:pg_namespace\" VALUES (11, 'pg_catalog', 10, NULL), "
    "  (2200, 'public', 10, NULL), (13000, 'information_schema', 10, NULL);\n"
    "CREATE TEMP TABLE \"vt:pg_class\"(oid BIGINT, relname VARCHAR, relnamespace BIGINT, "
    "  reltype BIGINT, reloftype BIGINT, relowner BIGINT, relam BIGINT, relfilenode BIGINT, "
    "  reltablespace BIGINT, relpages INTEGER, reltuples FLOAT, relallvisible INTEGER, "
    "  reltoastrelid BIGINT, relhasindex BOOLEAN, relisshared BOOLEAN, relpersistence VARCHAR, "
    "  relkind VARCHAR, relnatts SMALLINT, relchecks SMALLINT, relhasrules BOOLEAN, "
    "  relhastriggers BOOLEAN, relhassubclass BOOLEAN, relrowsecurity BOOLEAN, "
    "  relforcerowsecurity BOOLEAN, relispopulated BOOLEAN, relreplident VARCHAR, "
    "  relispartition BOOLEAN, relrewrite BIGINT, relfrozenxid BIGINT, relminmxid BIGINT, "
    "  relacl VARCHAR[], reloptions VARCHAR[], relpartbound VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_attribute\"(attrelid BIGINT, attname VARCHAR, atttypid BIGINT, "
    "  attstattarget INTEGER, attlen SMALLINT, attnum SMALLINT, attndims INTEGER, "
    "  attcacheoff INTEGER, atttypmod INTEGER, attbyval BOOLEAN, attalign VARCHAR, "
    "  attstorage VARCHAR, attcompression VARCHAR, attnotnull BOOLEAN, atthasdef BOOLEAN, "
    "  atthasmissing BOOLEAN, attidentity VARCHAR, attgenerated VARCHAR, attisdropped BOOLEAN, "
    "  attislocal BOOLEAN, attinhcount INTEGER, attcollation BIGINT, attacl VARCHAR[], "
    "  attoptions VARCHAR[], attfdwoptions VARCHAR[], attmissingval VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_type\"(oid BIGINT, typname VARCHAR, typnamespace BIGINT, "
    "  typowner BIGINT, typlen SMALLINT, typbyval BOOLEAN, typtype VARCHAR, typcategory VARCHAR, "
    "  typispreferred BOOLEAN, typisdefined BOOLEAN, typdelim VARCHAR, typrelid BIGINT, "
    "  typsubscript VARCHAR, typelem BIGINT, typarray BIGINT, typinput VARCHAR, "
    "  typoutput VARCHAR, typreceive VARCHAR, typsend VARCHAR, typmodin VARCHAR, "
    "  typmodout VARCHAR, typanalyze VARCHAR, typalign VARCHAR, typstorage VARCHAR, "
    "  typnotnull BOOLEAN, typbasetype BIGINT, typtypmod INTEGER, typndims INTEGER, "
    "  typcollation BIGINT, typdefaultbin VARCHAR, typdefault VARCHAR, typacl VARCHAR[]);\n"
    "CREATE TEMP TABLE \"vt:typnames\"(oid BIGINT, sqlname VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_database\"(oid BIGINT, datname VARCHAR, datdba BIGINT, "
    "  encoding INTEGER, datlocprovider VARCHAR, datistemplate BOOLEAN, datallowconn BOOLEAN, "
    "  datconnlimit INTEGER, datfrozenxid BIGINT, datminmxid BIGINT, dattablespace BIGINT, "
    "  datcollate VARCHAR, datctype VARCHAR, daticulocale VARCHAR, datcollversion VARCHAR, "
    "  datacl VARCHAR[]);\n"
    "CREATE TEMP TABLE \"vt:pg_roles\"(rolname VARCHAR, rolsuper BOOLEAN, rolinherit BOOLEAN, "
    "  rolcreaterole BOOLEAN, rolcreatedb BOOLEAN, rolcanlogin BOOLEAN, rolreplication BOOLEAN, "
    "  rolconnlimit INTEGER, rolpassword VARCHAR, rolvaliduntil TIMESTAMPTZ, "
    "  rolbypassrls BOOLEAN, rolconfig VARCHAR[], oid BIGINT);\n"
    "CREATE TEMP VIEW \"vt:pg_user\" AS SELECT rolname AS usename, oid AS usesysid, "
    "  rolcreatedb AS usecreatedb, rolsuper AS usesuper, rolreplication AS userepl, "
    "  rolbypassrls AS usebypassrls, '********' AS passwd, rolvaliduntil AS valuntil, "
    "  rolconfig AS useconfig FROM \"vt:pg_roles\";\n"
    "CREATE TEMP TABLE \"vt:pg_am\"(oid BIGINT, amname VARCHAR, amhandler VARCHAR, "
    "  amtype VARCHAR);\n"
    "INSERT INTO \"vt:pg_am\" VALUES (2, 'heap', 'heap_tableam_handler', 't');\n"
    "CREATE TEMP TABLE \"vt:pg_tablespace\"(oid BIGINT, spcname VARCHAR, spcowner BIGINT, "
    "  spcacl VARCHAR[], spcoptions VARCHAR[]);\n"
    "INSERT INTO \"vt:pg_tablespace\" VALUES (1663, 'pg_default', 10, NULL, NULL);\n"
    /* What datasets never have: empty, with the columns clients select. */
    "CREATE TEMP TABLE \"vt:pg_attrdef\"(oid BIGINT, adrelid BIGINT, adnum SMALLINT, "
    "  adbin VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_collation\"(oid BIGINT, collname VARCHAR, "
    "  collnamespace BIGINT, collowner BIGINT, collprovider VARCHAR, collisdeterministic "
    "  BOOLEAN, collencoding INTEGER, collcollate VARCHAR, collctype VARCHAR, "
    "  colliculocale VARCHAR, collversion VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_constraint\"(oid BIGINT, conname VARCHAR, connamespace BIGINT, "
    "  contype VARCHAR, condeferrable BOOLEAN, condeferred BOOLEAN, convalidated BOOLEAN, "
    "  conrelid BIGINT, contypid BIGINT, conindid BIGINT, conparentid BIGINT, "
    "  confrelid BIGINT, confupdtype VARCHAR, confdeltype VARCHAR, confmatchtype VARCHAR, "
    "  conislocal BOOLEAN, coninhcount INTEGER, connoinherit BOOLEAN, conkey SMALLINT[], "
    "  confkey SMALLINT[], conpfeqop BIGINT[], conppeqop BIGINT[], conffeqop BIGINT[], "
    "  confdelsetcols SMALLINT[], conexclop BIGINT[], conbin VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_depend\"(classid BIGINT, objid BIGINT, objsubid INTEGER, "
    "  refclassid BIGINT, refobjid BIGINT, refobjsubid INTEGER, deptype VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_description\"(objoid BIGINT, classoid BIGINT, "
    "  objsubid INTEGER, description VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_enum\"(oid BIGINT, enumtypid BIGINT, enumsortorder FLOAT, "
    "  enumlabel VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_extension\"(oid BIGINT, extname VARCHAR, extowner BIGINT, "
    "  extnamespace BIGINT, extrelocatable BOOLEAN, extversion VARCHAR, extconfig BIGINT[], "
    "  extcondition VARCHAR[]);\n"
    "CREATE TEMP TABLE \"vt:pg_index\"(indexrelid BIGINT, indrelid BIGINT, indnatts SMALLINT, "
    "  indnkeyatts SMALLINT, indisunique BOOLEAN, indnullsnotdistinct BOOLEAN, "
    "  indisprimary BOOLEAN, indisexclusion BOOLEAN, indimmediate BOOLEAN, "
    "  indisclustered BOOLEAN, indisvalid BOOLEAN, indcheckxmin BOOLEAN, indisready BOOLEAN, "
    "  indislive BOOLEAN, indisreplident BOOLEAN, indkey SMALLINT[], indcollation BIGINT[], "
    "  indclass BIGINT[], indoption SMALLINT[], indexprs VARCHAR, indpred VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_inherits\"(inhrelid BIGINT, inhparent BIGINT, "
    "  inhseqno INTEGER, inhdetachpending BOOLEAN);\n"
    "CREATE TEMP TABLE \"vt:pg_policy\"(oid BIGINT, polname VARCHAR, polrelid BIGINT, "
    "  polcmd VARCHAR, polpermissive BOOLEAN, polroles BIGINT[], polqual VARCHAR, "
    "  polwithcheck VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_proc\"(oid BIGINT, proname VARCHAR, pronamespace BIGINT, "
    "  proowner BIGINT, prolang BIGINT, prokind VARCHAR, proretset BOOLEAN, "
    "  prorettype BIGINT, proargtypes VARCHAR, proargnames VARCHAR[], prosrc VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_publication\"(oid BIGINT, pubname VARCHAR, pubowner BIGINT, "
    "  puballtables BOOLEAN, pubinsert BOOLEAN, pubupdate BOOLEAN, pubdelete BOOLEAN, "
    "  pubtruncate BOOLEAN, pubviaroot BOOLEAN);\n"
    "CREATE TEMP TABLE \"vt:pg_publication_namespace\"(oid BIGINT, pnpubid BIGINT, "
    "  pnnspid BIGINT);\n"
    "CREATE TEMP TABLE \"vt:pg_publication_rel\"(oid BIGINT, prpubid BIGINT, prrelid BIGINT, "
    "  prqual VARCHAR, prattrs SMALLINT[]);\n"
    "CREATE TEMP TABLE \"vt:pg_range\"(rngtypid BIGINT, rngsubtype BIGINT, "
    "  rngmultitypid BIGINT, rngcollation BIGINT, rngsubopc BIGINT, rngcanonical VARCHAR, "
    "  rngsubdiff VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_statistic_ext\"(oid BIGINT, stxrelid BIGINT, stxname VARCHAR, "
    "  stxnamespace BIGINT, stxowner BIGINT, stxstattarget INTEGER, stxkeys SMALLINT[], "
    "  stxkind VARCHAR[], stxexprs VARCHAR);\n"
    "CREATE TEMP TABLE \"vt:pg_trigger\"(oid BIGINT, tgrelid BIGINT, tgparentid BIGINT, "
    "  tgname VARCHAR, tgfoid BIGINT, tgtype SMALLINT, tgenabled VARCHAR, tgisinternal BOOLEAN);\n"
    "CREATE TEMP TABLE \"vt:pg_rewrite\"(oid BIGINT, rulename VARCHAR, ev_class BIGINT, "
    "  ev_type VARCHAR, ev_enabled VARCHAR, is_instead BOOLEAN);\n"
    "CREATE TEMP TABLE \"vt:pg_partitioned_table\"(partrelid BIGINT, partstrat VARCHAR, "
    "  partnatts SMALLINT, partdefid BIGINT);\n"
    "CREATE TEMP TABLE \"vt:pg_foreign_table\"(ftrelid BIGINT, ftserver BIGINT, "
    "  ftoptions VARCHAR[]);\n"
    "CREATE TEMP TABLE \"vt:pg_event_trigger\"(oid BIGINT, evtname VARCHAR, evtevent VARCHAR, "
    "  evtowner BIGINT, evtfoid BIGINT, evtenabled VARCHAR, evttags VARCHAR[]);\n"
    "CREATE TEMP TABLE \"vt:pg_language\"(oid BIGINT, lanname VARCHAR, lanowner BIGINT, "
    "  lanispl BOOLEAN, lanpltrusted BOOLEAN);\n"
    "CREATE TEMP TABLE \"vt:pg_stat_activity\"(datid BIGINT, datname VARCHAR, pid INTEGER, "
    "  usename VARCHAR, application_name VARCHAR, client_addr VARCHAR, state VARCHAR, "
    "  query VARCHAR);\n"
    "CREATE TEMP VIEW \"vt:pg_views\" AS SELECT CAST(NULL AS VARCHAR) AS schemaname, "
    "  CAST(NULL AS VARCHAR) AS viewname, CAST(NULL AS VARCHAR) AS viewowner, "
    "  CAST(NULL AS VARCHAR) AS definition WHERE false;\n"
    "CREATE TEMP VIEW \"vt:pg_matviews\" AS SELECT CAST(NULL AS VARCHAR) AS schemaname, "
    "  CAST(NULL AS VARCHAR) AS matviewname, CAST(NULL AS VARCHAR) AS matviewowner, "
    "  CAST(NULL AS VARCHAR) AS tablespace, false AS hasindexes, false AS ispopulated, "
    "  CAST(NULL AS VARCHAR) AS definition WHERE false;\n"
    "CREATE TEMP VIEW \"vt:pg_sequences\" AS SELECT CAST(NULL AS VARCHAR) AS schemaname, "
    "  CAST(NULL AS VARCHAR) AS sequencename WHERE false;\n"
    "CREATE TEMP VIEW \"vt:pg_indexes\" AS SELECT CAST(NULL AS VARCHAR) AS schemaname, "
    "  CAST(NULL AS VARCHAR) AS tablename, CAST(NULL AS VARCHAR) AS indexname, "
    "  CAST(NULL AS VARCHAR) AS tablespace, CAST(NULL AS VARCHAR) AS indexdef WHERE false;\n"
    "CREATE TEMP VIEW \"vt:pg_tables\" AS SELECT n.nspname AS schemaname, c.relname AS "
    "  tablename, r.rolname AS tableowner, CAST(NULL AS VARCHAR) AS tablespace, "
    "  c.relhasindex AS hasindexes, c.relhasrules AS hasrules, c.relhastriggers AS "
    "  hastriggers, c.relrowsecurity AS rowsecurity FROM \"vt:pg_class\" c JOIN "
    "  \"vt:pg_namespace\" n ON n.oid = c.relnamespace LEFT JOIN \"vt:pg_roles\" r ON "
    "  r.oid = c.relowner WHERE c.relkind IN ('r', 'p');\n"
    "CREATE TEMP VIEW \"vt:pg_settings\" AS SELECT display AS name, setting, "
    "  CAST(NULL AS VARCHAR) AS unit, 'Client Connection Defaults' AS category, "
    "  description AS short_desc, 'user' AS context, 'string' AS vartype, "
    "  'default' AS source, setting AS boot_val, setting AS reset_val "
    "  FROM \"vt:settings\" WHERE name NOT LIKE 'vt.%';\n"
    /* information_schema */
    "CREATE TEMP VIEW \"vt:is_schemata\" AS SELECT (SELECT setting FROM \"vt:settings\" "
    "  WHERE name = 'vt.database') AS catalog_name, nspname AS schema_name, "
    "  (SELECT setting FROM \"vt:settings\" WHERE name = 'vt.user') AS schema_owner, "
    "  CAST(NULL AS VARCHAR) AS default_character_set_catalog, CAST(NULL AS VARCHAR) AS "
    "  default_character_set_schema, CAST(NULL AS VARCHAR) AS default_character_set_name, "
    "  CAST(NULL AS VARCHAR) AS sql_path FROM \"vt:pg_namespace\";\n"
    "CREATE TEMP VIEW \"vt:is_tables\" AS SELECT (SELECT setting FROM \"vt:settings\" WHERE "
    "  name = 'vt.database') AS table_catalog, 'public' AS table_schema, c.relname AS "
    "  table_name, 'BASE TABLE' AS table_type, CAST(NULL AS VARCHAR) AS "
    "  self_referencing_column_name, CAST(NULL AS VARCHAR) AS reference_generation, "
    "  CAST(NULL AS VARCHAR) AS user_defined_type_catalog, CAST(NULL AS VARCHAR) AS "
    "  user_defined_type_schema, CAST(NULL AS VARCHAR) AS user_defined_type_name, "
    "  'NO' AS is_insertable_into, 'NO' AS is_typed, CAST(NULL AS VARCHAR) AS commit_action "
    "  FROM \"vt:pg_class\" c WHERE c.relkind = 'r';\n"
    "CREATE TEMP VIEW \"vt:is_columns\" AS SELECT (SELECT setting FROM \"vt:settings\" WHERE "
    "  name = 'vt.database') AS table_catalog, 'public' AS table_schema, c.relname AS "
    "  table_name, a.attname AS column_name, CAST(a.attnum AS INTEGER) AS ordinal_position, "
    "  CAST(NULL AS VARCHAR) AS column_default, CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' "
    "  END AS is_nullable, CASE WHEN t.typelem <> 0 THEN 'ARRAY' ELSE "
    "  (SELECT sqlname FROM \"vt:typnames\" x WHERE x.oid = a.atttypid) END AS data_type, "
    "  CAST(NULL AS INTEGER) AS character_maximum_length, CAST(NULL AS INTEGER) AS "
    "  character_octet_length, CASE WHEN a.atttypid = 1700 AND a.atttypmod >= 4 THEN "
    "  CAST(((a.atttypmod - 4) >> 16) AS INTEGER) WHEN a.atttypid IN (20, 21, 23) THEN "
    "  CAST(a.attlen * 8 - 1 AS INTEGER) WHEN a.atttypid = 700 THEN 24 WHEN a.atttypid = 701 "
    "  THEN 53 END AS numeric_precision, CASE WHEN a.atttypid IN (20, 21, 23, 700, 701) OR "
    "  (a.atttypid = 1700 AND a.atttypmod >= 4) THEN 2 END AS numeric_precision_radix, CASE "
    "  WHEN a.atttypid = 1700 AND a.atttypmod >= 4 THEN CAST(((a.atttypmod - 4) & 65535) AS "
    "  INTEGER) WHEN a.atttypid IN (20, 21, 23) THEN 0 END AS numeric_scale, CASE WHEN "
    "  a.atttypid IN (1082, 1083, 1114, 1184, 1266) THEN 6 END AS datetime_precision, "
    "  CAST(NULL AS VARCHAR) AS interval_type, (SELECT setting FROM \"vt:settings\" WHERE "
    "  name = 'vt.database') AS udt_catalog, 'pg_catalog' AS udt_schema, t.typname AS "
    "  udt_name, 'NO' AS is_identity, 'NEVER' AS is_generated, 'NO' AS is_updatable "
    "  FROM \"vt:pg_attribute\" a JOIN \"vt:pg_class\" c ON c.oid = a.attrelid "
    "  LEFT JOIN \"vt:pg_type\" t ON t.oid = a.atttypid;\n"
    "CREATE TEMP VIEW \"vt:is_views\" AS SELECT CAST(NULL AS VARCHAR) AS table_catalog, "
    "  CAST(NULL AS VARCHAR) AS table_schema, CAST(NULL AS VARCHAR) AS table_name, "
    "  CAST(NULL AS VARCHAR) AS view_definition WHERE false;\n"
    "CREATE TEMP VIEW \"vt:is_table_constraints\" AS SELECT CAST(NULL AS VARCHAR) AS "
    "  constraint_catalog, CAST(NULL AS VARCHAR) AS constraint_schema, CAST(NULL AS VARCHAR) "
    "  AS constraint_name, CAST(NULL AS VARCHAR) AS table_catalog, CAST(NULL AS VARCHAR) AS "
    "  table_schema, CAST(NULL AS VARCHAR) AS table_name, CAST(NULL AS VARCHAR) AS "
    "  constraint_type WHERE false;\n"
    "CREATE TEMP VIEW \"vt:is_key_column_usage\" AS SELECT CAST(NULL AS VARCHAR) AS "
    "  constraint_name, CAST(NULL AS VARCHAR) AS table_schema, CAST(NULL AS VARCHAR) AS "
    "  table_name, CAST(NULL AS VARCHAR) AS column_name, CAST(NULL AS INTEGER) AS "
    "  ordinal_position WHERE false;\n"
    "CREATE TEMP VIEW \"vt:is_referential_constraints\" AS SELECT CAST(NULL AS VARCHAR) AS "
    "  constraint_name, CAST(NULL AS VARCHAR) AS unique_constraint_name WHERE false;\n"
    "CREATE TEMP VIEW \"vt:is_check_constraints\" AS SELECT CAST(NULL AS VARCHAR) AS "
    "  constraint_name, CAST(NULL AS VARCHAR) AS check_clause WHERE false;\n"
    "CREATE TEMP VIEW \"vt:is_routines\" AS SELECT CAST(NULL AS VARCHAR) AS routine_name, "
    "  CAST(NULL AS VARCHAR) AS routine_schema, CAST(NULL AS VARCHAR) AS routine_type "
    "  WHERE false;\n"
    /* functions */
    "CREATE TEMP MACRO \"vt:setting\"(n) AS (SELECT setting FROM \"vt:settings\" WHERE "
    "  name = lower(CAST(n AS VARCHAR)));\n"
    "CREATE TEMP MACRO \"vt:current_setting\"(n) AS CASE WHEN \"vt:setting\"(n) IS NULL THEN "
    "  error('unrecognized configuration parameter \"' || CAST(n AS VARCHAR) || '\"') ELSE "
    "  \"vt:setting\"(n) END, (n, missing_ok) AS CASE WHEN \"vt:setting\"(n) IS NULL AND NOT "
    "  missing_ok THEN error('unrecognized configuration parameter \"' || CAST(n AS VARCHAR) "
    "  || '\"') ELSE \"vt:setting\"(n) END;\n"
    "CREATE TEMP MACRO \"vt:version\"() AS \"vt:setting\"('vt.version');\n"
    "CREATE TEMP MACRO \"vt:current_database\"() AS \"vt:setting\"('vt.database');\n"
    "CREATE TEMP MACRO \"vt:current_user\"() AS \"vt:setting\"('vt.user');\n"
    "CREATE TEMP MACRO \"vt:current_schema\"() AS 'public';\n"
    "CREATE TEMP MACRO \"vt:current_schemas\"(implicit) AS CASE WHEN implicit THEN "
    "  ['pg_catalog', 'public'] ELSE ['public'] END;\n"
    "CREATE TEMP MACRO \"vt:pg_get_userbyid\"(o) AS COALESCE((SELECT rolname FROM "
    "  \"vt:pg_roles\" WHERE oid = o), 'unknown (OID=' || CAST(o AS VARCHAR) || ')');\n"
    "CREATE TEMP MACRO \"vt:visible\"(o) AS true;\n"
    "CREATE TEMP MACRO \"vt:null2\"(a) AS CAST(NULL AS VARCHAR), (a, b) AS CAST(NULL AS "
    "  VARCHAR), (a, b, c) AS CAST(NULL AS VARCHAR);\n"
    "CREATE TEMP MACRO \"vt:false0\"() AS false;\n"
    "CREATE TEMP MACRO \"vt:false1\"(a) AS false;\n"
    "CREATE TEMP MACRO \"vt:has_privilege\"(a, b) AS upper(CAST(b AS VARCHAR)) IN ('SELECT', "
    "  'USAGE', 'CONNECT', 'REFERENCES'), (a, b, c) AS upper(CAST(c AS VARCHAR)) IN "
    "  ('SELECT', 'USAGE', 'CONNECT', 'REFERENCES', 'MEMBER'), (a, b, c, d) AS "
    "  upper(CAST(d AS VARCHAR)) IN ('SELECT', 'USAGE', 'REFERENCES');\n"
    "CREATE TEMP MACRO \"vt:obj_description\"(o) AS CAST(NULL AS VARCHAR), (o, c) AS "
    "  (SELECT description FROM \"vt:pg_description\" WHERE objoid = o AND objsubid = 0 "
    "  LIMIT 1);\n"
    "CREATE TEMP MACRO \"vt:pg_encoding_to_char\"(e) AS CASE WHEN e = 6 THEN 'UTF8' WHEN "
    "  e = 0 THEN 'SQL_ASCII' ELSE '' END;\n"
    "CREATE TEMP MACRO \"vt:pg_backend_pid\"() AS CAST(\"vt:setting\"('vt.pid') AS "
    "  INTEGER);\n"
    "CREATE TEMP MACRO \"vt:pg_postmaster_start_time\"() AS CAST(\"vt:setting\"('vt.started') "
    "  AS TIMESTAMPTZ);\n"
    "CREATE TEMP MACRO \"vt:array_upper\"(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN "
    "  len(a) END;\n"
    "CREATE TEMP MACRO \"vt:array_lower\"(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN 1 END;\n"
    "CREATE TEMP MACRO \"vt:quote_ident\"(s) AS CASE WHEN regexp_full_match(CAST(s AS "
    "  VARCHAR), '[a-z_][a-z0-9_$]*') THEN CAST(s AS VARCHAR) ELSE '\"' || "
    "  replace(CAST(s AS VARCHAR), '\"', '\"\"') || '\"' END;\n"
    "CREATE TEMP MACRO \"vt:format_type\"(o, m) AS CASE WHEN o IS NULL THEN NULL "
    "  WHEN o = 1700 AND m >= 4 THEN 'numeric(' || CAST(((m - 4) >> 16) AS VARCHAR) || ',' "
    "  || CAST(((m - 4) & 65535) AS VARCHAR) || ')' "
    "  WHEN (SELECT typelem FROM \"vt:pg_type\" WHERE oid = o) <> 0 THEN (SELECT sqlname FROM "
    "  \"vt:typnames\" WHERE oid = (SELECT typelem FROM \"vt:pg_type\" WHERE oid = o)) || '[]' "
    "  ELSE COALESCE((SELECT sqlname FROM \"vt:typnames\" WHERE oid = o), '?\?\?') END;\n"
    /* unqualified "x" or "schema.x", quotes stripped */
    "CREATE TEMP MACRO \"vt:relname\"(s) AS replace(regexp_replace(CAST(s AS VARCHAR), "
    "  '^\\s*(\"?(public|pg_catalog)\"?\\.)?\"?', ''), '\"', '');\n"
    /* PostgreSQL's own catalog tables have fixed OIDs that drivers look up
     * ('pg_class'::regclass); they are not rows of pg_class here. */
    "CREATE TEMP TABLE \"vt:catalog_oids\"(relname VARCHAR, oid BIGINT);\n"
    "INSERT INTO \"vt:catalog_oids\" VALUES ('pg_type', 1247), ('pg_attribute', 1249), "
    "  ('pg_proc', 1255), ('pg_class', 1259), ('pg_authid', 1260), ('pg_database', 1262), "
    "  ('pg_namespace', 2615), ('pg_description', 2609), ('pg_constraint', 2606), "
    "  ('pg_index', 2610), ('pg_attrdef', 2604), ('pg_inherits', 2611), ('pg_am', 2601), "
    "  ('pg_collation', 3456), ('pg_roles', 12001), ('pg_settings', 12002);\n"
    "CREATE TEMP MACRO \"vt:to_regclass\"(s) AS COALESCE((SELECT oid FROM \"vt:pg_class\" "
    "  WHERE relname = \"vt:relname\"(s)), (SELECT oid FROM \"vt:catalog_oids\" WHERE relname "
    "  = \"vt:relname\"(s)));\n"
    "CREATE TEMP MACRO \"vt:to_regtype\"(s) AS (SELECT t.oid FROM \"vt:pg_type\" t LEFT JOIN "
    "  \"vt:typnames\" n ON n.oid = t.oid WHERE t.typname = lower(\"vt:relname\"(s)) OR "
    "  n.sqlname = lower(\"vt:relname\"(s)) LIMIT 1);\n"
    "CREATE TEMP MACRO \"vt:to_regnamespace\"(s) AS (SELECT oid FROM \"vt:pg_namespace\" "
    "  WHERE nspname = replace(CAST(s AS VARCHAR), '\"', ''));\n"
    /* casts: a string in (a constant or a parameter) reads as the OID, any
     * other value shows as the name, as PostgreSQL's reg* types print */
    "CREATE TEMP MACRO \"vt:regclass_in\"(s) AS CASE WHEN TRY_CAST(s AS BIGINT) IS NOT NULL "
    "  THEN TRY_CAST(s AS BIGINT) WHEN \"vt:to_regclass\"(s) IS NULL THEN error('relation \"' "
    "  || CAST(s AS VARCHAR) || '\" does not exist') ELSE \"vt:to_regclass\"(s) END;\n"
    "CREATE TEMP MACRO \"vt:regclass_out\"(o) AS COALESCE((SELECT relname FROM "
    "  \"vt:pg_class\" WHERE oid = o), (SELECT relname FROM \"vt:catalog_oids\" WHERE oid = "
    "  o), CAST(o AS VARCHAR));\n"
    "CREATE TEMP MACRO \"vt:regtype_in\"(s) AS CASE WHEN TRY_CAST(s AS BIGINT) IS NOT NULL "
    "  THEN TRY_CAST(s AS BIGINT) WHEN \"vt:to_regtype\"(s) IS NULL THEN error('type \"' || "
    "  CAST(s AS VARCHAR) || '\" does not exist') ELSE \"vt:to_regtype\"(s) END;\n"
    "CREATE TEMP MACRO \"vt:regtype_out\"(o) AS COALESCE(\"vt:format_type\"(o, -1), "
    "  CAST(o AS VARCHAR));\n"
    "CREATE TEMP MACRO \"vt:regnamespace_in\"(s) AS CASE WHEN TRY_CAST(s AS BIGINT) IS NOT "
    "  NULL THEN TRY_CAST(s AS BIGINT) WHEN \"vt:to_regnamespace\"(s) IS NULL THEN "
    "  error('schema \"' || CAST(s AS VARCHAR) || '\" does not exist') ELSE "
    "  \"vt:to_regnamespace\"(s) END;\n"
    "CREATE TEMP MACRO \"vt:regnamespace_out\"(o) AS COALESCE((SELECT nspname FROM "
    "  \"vt:pg_namespace\" WHERE oid = o), CAST(o AS VARCHAR));\n"
    "CREATE TEMP MACRO \"vt:regrole_in\"(s) AS CASE WHEN TRY_CAST(s AS BIGINT) IS NOT NULL "
    "  THEN TRY_CAST(s AS BIGINT) ELSE (SELECT oid FROM \"vt:pg_roles\" WHERE rolname = "
    "  replace(CAST(s AS VARCHAR), '\"', '')) END;\n"
    "CREATE TEMP MACRO \"vt:regrole_out\"(o) AS COALESCE((SELECT rolname FROM "
    "  \"vt:pg_roles\" WHERE oid = o), CAST(o AS VARCHAR));\n"
    "CREATE TEMP MACRO \"vt:regproc_in\"(s) AS regexp_replace(CAST(s AS VARCHAR), "
    "  '^pg_catalog\\.', '');\n"
    "CREATE TEMP MACRO \"vt:regproc_out\"(s) AS CAST(s AS VARCHAR);\n"
    "CREATE TEMP MACRO \"vt:text\"(s) AS CAST(s AS VARCHAR);\n"
    "CREATE TEMP MACRO \"vt:imatch\"(s, p) AS regexp_matches(s, p, 'i');\n"
    "CREATE TEMP MACRO \"vt:inotmatch\"(s, p) AS NOT regexp_matches(s, p, 'i');\n"
    "CREATE TEMP MACRO \"vt:int8\"(s) AS CAST(s AS BIGINT);\n";

/* The types this server sends (types.c) and their arrays: oid, typname,
 * typlen, typbyval, typcategory, typelem, typarray, in/out/recv/send stem,
 * typalign, typcollation, SQL name (format_type). */
static const struct pgtype {
    int oid;
    const char *name;
    int len;
    bool byval;
    char category;
    int array;
    const char *io;
    char align;
    int collation;
    const char *sqlname;
} pg_types[] = {
    {16, "bool", 1, true, 'B', 1000, "bool", 'c', 0, "boolean"},
    {17, "bytea", -1, false, 'U', 1001, "bytea", 'i', 0, "bytea"},
    {18, "char", 1, true, 'Z', 1002, "char", 'c', 0, "\"char\""},
    {19, "name", 64, false, 'S', 1003, "name", 'c', 950, "name"},
    {20, "int8", 8, true, 'N', 1016, "int8", 'd', 0, "bigint"},
    {21, "int2", 2, true, 'N', 1005, "int2", 's', 0, "smallint"},
    {23, "int4", 4, true, 'N', 1007, "int4", 'i', 0, "integer"},
    {25, "text", -1, false, 'S', 1009, "text", 'i', 100, "text"},
    {26, "oid", 4, true, 'N', 1028, "oid", 'i', 0, "oid"},
    {114, "json", -1, false, 'U', 199, "json", 'i', 0, "json"},
    {700, "float4", 4, true, 'N', 1021, "float4", 'i', 0, "real"},
    {701, "float8", 8, true, 'N', 1022, "float8", 'd', 0, "double precision"},
    {705, "unknown", -2, false, 'X', 0, "unknown", 'c', 0, "unknown"},
    {1043, "varchar", -1, false, 'S', 1015, "varchar", 'i', 100, "character varying"},
    {1082, "date", 4, true, 'D', 1182, "date", 'i', 0, "date"},
    {1083, "time", 8, true, 'D', 1183, "time", 'd', 0, "time without time zone"},
    {1114, "timestamp", 8, true, 'D', 1115, "timestamp", 'd', 0, "timestamp without time zone"},
    {1184, "timestamptz", 8, true, 'D', 1185, "timestamptz", 'd', 0, "timestamp with time zone"},
    {1186, "interval", 16, false, 'T', 1187, "interval", 'd', 0, "interval"},
    {1266, "timetz", 12, false, 'D', 1270, "timetz", 'd', 0, "time with time zone"},
    {1560, "bit", -1, false, 'V', 1561, "bit", 'i', 0, "bit"},
    {1562, "varbit", -1, false, 'V', 1563, "varbit", 'i', 0, "bit varying"},
    {1700, "numeric", -1, false, 'N', 1231, "numeric", 'i', 0, "numeric"},
    {2950, "uuid", 16, false, 'U', 2951, "uuid", 'c', 0, "uuid"},
    {3802, "jsonb", -1, false, 'U', 3807, "jsonb", 'i', 0, "jsonb"},
};

/* ------------------------------------------------------------ the sync */

/* What a worker connection has (thread-local: a worker owns its connection). */
struct conn_state {
    duckdb_connection con;
    bool created;
    uint64_t tables_sig;
    uint64_t settings_sig;
};

static _Thread_local struct conn_state tls;

static enum vt_err run(duckdb_connection con, const char *sql, struct vt_error *err)
{
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        const char *m = duckdb_result_error(&res);
        vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", m ? m : "failed");
        duckdb_destroy_result(&res);
        return VT_ERR_INTERNAL;
    }
    duckdb_destroy_result(&res);
    return VT_ERR_OK;
}

static enum vt_err create_catalog(duckdb_connection con, struct vt_error *err)
{
    if (run(con, catalog_ddl, err) != VT_ERR_OK)
        return err->code;
    struct strbuf q;
    sb_init(&q, 0);
    sb_adds(&q, "INSERT INTO \"vt:pg_type\" VALUES ");
    size_t n = sizeof pg_types / sizeof pg_types[0];
    for (size_t i = 0; i < n; i++) {
        const struct pgtype *t = &pg_types[i];
        for (int arr = 0; arr < 2; arr++) {
            if (arr && !t->array)
                continue;
            if (i || arr)
                sb_adds(&q, ", ");
            sb_addf(&q,
                    "(%d, '%s%s', 11, 10, %d, %s, 'b', '%c', false, true, ',', 0, %s, %d, %d, "
                    "'%s', '%s', '%s', '%s', '-', '-', '-', '%c', '%c', false, 0, -1, 0, %d, "
                    "NULL, NULL, NULL)",
                    arr ? t->array : t->oid, arr ? "_" : "", t->name, arr ? -1 : t->len,
                    arr || !t->byval ? "false" : "true", arr ? 'A' : t->category,
                    arr ? "'array_subscript_handler'" : "'-'", arr ? t->oid : 0,
                    arr ? 0 : t->array, arr ? "array_in" : t->io, arr ? "array_out" : t->io,
                    arr ? "array_recv" : t->io, arr ? "array_send" : t->io,
                    arr ? (t->align == 'd' ? 'd' : 'i') : t->align,
                    arr || t->len == -1 ? 'x' : 'p', t->collation);
            /* in/out names: <stem>in, <stem>out, ...: patch below */
        }
    }
    sb_adds(&q, ";\nUPDATE \"vt:pg_type\" SET typinput = typinput || 'in', typoutput = "
                "typoutput || 'out', typreceive = typreceive || 'recv', typsend = typsend || "
                "'send' WHERE typelem = 0;\nINSERT INTO \"vt:typnames\" VALUES ");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_adds(&q, ", ");
        sb_addf(&q, "(%d, ", pg_types[i].oid);
        sb_add_sql_string(&q, pg_types[i].sqlname);
        sb_adds(&q, ")");
    }
    sb_adds(&q, ";");
    enum vt_err rc = q.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL)
                                : run(con, q.buf, err);
    sb_release(&q);
    return rc;
}

/* The OIDs of the tables: stable for a name (a hash), distinct within one
 * catalog (linear probing in name order). */
static void table_oids(const struct pgw_cat_table *t, size_t n, uint32_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t oid = OID_FIRST_TABLE + (uint32_t)(XXH3_64bits(t[i].name, strlen(t[i].name)) %
                                                    1000000u) * 2;
        for (bool clash = true; clash;) {
            clash = false;
            for (size_t k = 0; k < i; k++)
                if (out[k] == oid) {
                    clash = true;
                    oid += 2;
                }
        }
        out[i] = oid;
    }
}

static enum vt_err fill_tables(duckdb_connection con, const struct pgw_cat_table *t, size_t n,
                               struct vt_error *err)
{
    if (run(con, "DELETE FROM \"vt:pg_class\"; DELETE FROM \"vt:pg_attribute\"; "
                 "DELETE FROM \"vt:pg_description\";",
            err) != VT_ERR_OK)
        return err->code;
    uint32_t *oids = calloc(n ? n : 1, sizeof *oids);
    if (!oids)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    table_oids(t, n, oids);
    duckdb_prepared_statement cls = NULL, att = NULL, desc = NULL;
    enum vt_err rc = VT_ERR_OK;
    if (duckdb_prepare(con,
                       "INSERT INTO \"vt:pg_class\" VALUES ($1, $2, 2200, 0, 0, 10, 2, $1, 0, "
                       "0, $3, 0, 0, false, false, 'p', 'r', $4, 0, false, false, false, false, "
                       "false, true, 'd', false, 0, 0, 0, NULL, NULL, NULL)",
                       &cls) != DuckDBSuccess ||
        duckdb_prepare(con,
                       "INSERT INTO \"vt:pg_attribute\" VALUES ($1, $2, $3, -1, $4, $5, $6, -1, "
                       "$7, false, 'i', 'x', '', $8, false, false, '', '', false, true, 0, $9, "
                       "NULL, NULL, NULL, NULL)",
                       &att) != DuckDBSuccess ||
        duckdb_prepare(con, "INSERT INTO \"vt:pg_description\" VALUES ($1, 1259, 0, $2)",
                       &desc) != DuckDBSuccess) {
        rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: cannot prepare the inserts");
        goto out;
    }
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        /* The columns' types as DuckDB gives them for the relation. */
        struct strbuf q;
        sb_init(&q, 0);
        sb_addf(&q, "SELECT * FROM %s LIMIT 0", t[i].relation);
        duckdb_prepared_statement ps = NULL;
        bool ok = !q.overflow && duckdb_prepare(con, q.buf, &ps) == DuckDBSuccess;
        sb_release(&q);
        if (!ok) {
            duckdb_destroy_prepare(&ps);
            continue; /* dropped meanwhile: left out */
        }
        idx_t ncol = duckdb_prepared_statement_column_count(ps);
        duckdb_bind_int64(cls, 1, oids[i]);
        duckdb_bind_varchar(cls, 2, t[i].name);
        duckdb_bind_double(cls, 3, (double)t[i].rows);
        duckdb_bind_int16(cls, 4, (int16_t)(ncol > 32767 ? 32767 : ncol));
        duckdb_result res;
        if (duckdb_execute_prepared(cls, &res) != DuckDBSuccess)
            rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
        duckdb_destroy_result(&res);
        if (t[i].description && *t[i].description && rc == VT_ERR_OK) {
            duckdb_bind_int64(desc, 1, oids[i]);
            duckdb_bind_varchar(desc, 2, t[i].description);
            if (duckdb_execute_prepared(desc, &res) != DuckDBSuccess)
                rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
            duckdb_destroy_result(&res);
        }
        for (idx_t c = 0; c < ncol && rc == VT_ERR_OK; c++) {
            duckdb_logical_type lt = duckdb_prepared_statement_column_logical_type(ps, c);
            struct pgw_typeinfo ti = pgw_type_of(lt);
            duckdb_destroy_logical_type(&lt);
            char *cname = (char *)duckdb_prepared_statement_column_name(ps, c);
            bool notnull = c < t[i].ncols && t[i].nullable && !t[i].nullable[c];
            duckdb_bind_int64(att, 1, oids[i]);
            duckdb_bind_varchar(att, 2, cname ? cname : "");
            duckdb_bind_int64(att, 3, ti.oid);
            duckdb_bind_int16(att, 4, ti.typlen);
            duckdb_bind_int16(att, 5, (int16_t)(c + 1));
            duckdb_bind_int32(att, 6, pgw_array_elem(ti.oid) ? 1 : 0);
            duckdb_bind_int32(att, 7, ti.typmod);
            duckdb_bind_boolean(att, 8, notnull);
            duckdb_bind_int64(att, 9, ti.oid == PGW_OID_TEXT ? 100 : 0);
            if (duckdb_execute_prepared(att, &res) != DuckDBSuccess)
                rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
            duckdb_destroy_result(&res);
            duckdb_free(cname); /* the C API's copy */
        }
        duckdb_destroy_prepare(&ps);
    }
out:
    duckdb_destroy_prepare(&cls);
    duckdb_destroy_prepare(&att);
    duckdb_destroy_prepare(&desc);
    free(oids);
    return rc;
}

static enum vt_err fill_settings(duckdb_connection con, const struct pgw_cat_setting *s,
                                 size_t n, const char *user, const char *database,
                                 struct vt_error *err)
{
    if (run(con, "DELETE FROM \"vt:settings\"; DELETE FROM \"vt:pg_roles\"; DELETE FROM "
                 "\"vt:pg_database\";",
            err) != VT_ERR_OK)
        return err->code;
    duckdb_prepared_statement ps = NULL;
    if (duckdb_prepare(con, "INSERT INTO \"vt:settings\" VALUES (lower($1), $1, $2, $3)", &ps) !=
        DuckDBSuccess) {
        duckdb_destroy_prepare(&ps);
        return vt_error_set(err, VT_ERR_INTERNAL, "catalog: cannot prepare the settings");
    }
    enum vt_err rc = VT_ERR_OK;
    for (size_t i = 0; i < n && rc == VT_ERR_OK; i++) {
        duckdb_bind_varchar(ps, 1, s[i].name);
        duckdb_bind_varchar(ps, 2, s[i].value ? s[i].value : "");
        duckdb_bind_varchar(ps, 3, s[i].description ? s[i].description : "");
        duckdb_result res;
        if (duckdb_execute_prepared(ps, &res) != DuckDBSuccess)
            rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
        duckdb_destroy_result(&res);
    }
    duckdb_destroy_prepare(&ps);
    if (rc != VT_ERR_OK)
        return rc;
    if (duckdb_prepare(con,
                       "INSERT INTO \"vt:pg_roles\" VALUES ($1, false, true, false, false, "
                       "true, false, -1, '********', NULL, false, NULL, 10); "
                       ,
                       &ps) != DuckDBSuccess) {
        duckdb_destroy_prepare(&ps);
        return vt_error_set(err, VT_ERR_INTERNAL, "catalog: cannot prepare the roles");
    }
    duckdb_bind_varchar(ps, 1, user);
    duckdb_result res;
    if (duckdb_execute_prepared(ps, &res) != DuckDBSuccess)
        rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
    duckdb_destroy_result(&res);
    duckdb_destroy_prepare(&ps);
    if (rc != VT_ERR_OK)
        return rc;
    if (duckdb_prepare(con,
                       "INSERT INTO \"vt:pg_database\" VALUES (16384, $1, 10, 6, 'c', false, "
                       "true, -1, 0, 0, 1663, 'C', 'C', NULL, NULL, NULL)",
                       &ps) != DuckDBSuccess) {
        duckdb_destroy_prepare(&ps);
        return vt_error_set(err, VT_ERR_INTERNAL, "catalog: cannot prepare the database");
    }
    duckdb_bind_varchar(ps, 1, database);
    if (duckdb_execute_prepared(ps, &res) != DuckDBSuccess)
        rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
    duckdb_destroy_result(&res);
    duckdb_destroy_prepare(&ps);
    return rc;
}

static uint64_t tables_signature(const struct pgw_cat_table *t, size_t n)
{
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return 0;
    XXH3_64bits_reset(st);
    for (size_t i = 0; i < n; i++) {
        XXH3_64bits_update(st, t[i].name, strlen(t[i].name) + 1);
        XXH3_64bits_update(st, t[i].generation, strlen(t[i].generation) + 1);
        if (t[i].description)
            XXH3_64bits_update(st, t[i].description, strlen(t[i].description) + 1);
    }
    uint64_t h = XXH3_64bits_digest(st) | 1; /* never 0: 0 is "not filled" */
    XXH3_freeState(st);
    return h;
}

static uint64_t settings_signature(const struct pgw_cat_setting *s, size_t n, const char *user,
                                   const char *database)
{
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return 0;
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, user, strlen(user) + 1);
    XXH3_64bits_update(st, database, strlen(database) + 1);
    for (size_t i = 0; i < n; i++) {
        XXH3_64bits_update(st, s[i].name, strlen(s[i].name) + 1);
        if (s[i].value)
            XXH3_64bits_update(st, s[i].value, strlen(s[i].value) + 1);
    }
    uint64_t h = XXH3_64bits_digest(st) | 1;
    XXH3_freeState(st);
    return h;
}

enum vt_err pgw_catalog_sync(duckdb_connection con, const struct pgw_cat_table *tables,
                             size_t ntables, const struct pgw_cat_setting *settings,
                             size_t nsettings, const char *user, const char *database,
                             struct vt_error *err)
{
    if (tls.con != con) {
        tls = (struct conn_state){.con = con};
    }
    if (!tls.created) {
        if (create_catalog(con, err) != VT_ERR_OK)
            return err->code;
        tls.created = true;
    }
    uint64_t ts = tables_signature(tables, ntables);
    if (ts != tls.tables_sig || !ts) {
        tls.tables_sig = 0;
        if (fill_tables(con, tables, ntables, err) != VT_ERR_OK)
            return err->code;
        tls.tables_sig = ts;
    }
    uint64_t ss = settings_signature(settings, nsettings, user, database);
    if (ss != tls.settings_sig || !ss) {
        tls.settings_sig = 0;
        if (fill_settings(con, settings, nsettings, user, database, err) != VT_ERR_OK)
            return err->code;
        tls.settings_sig = ss;
    }
    return VT_ERR_OK;
}
