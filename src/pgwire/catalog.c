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

#include "pgwire/pgwire_internal.h"
#include "util/strbuf.h"

#define OID_PG_CATALOG 11
#define OID_PUBLIC 2200
#define OID_INFORMATION_SCHEMA 13000
#define OID_OWNER 10
#define OID_DATABASE 16384
#define OID_FIRST_TABLE 16385

/* ------------------------------------------------------------ the names */

/* Relations: PostgreSQL's name and ours ("vt:" + name; "vt:is_" + name for
 * information_schema). */
#define R(n) {n, "vt:" n}
#define I(n) {n, "vt:is_" n}

static const char *const relations[][2] = {
    R("pg_am"), R("pg_attrdef"), R("pg_attribute"), R("pg_class"), R("pg_collation"),
    R("pg_constraint"), R("pg_database"), R("pg_depend"), R("pg_description"), R("pg_enum"),
    R("pg_extension"), R("pg_index"), R("pg_inherits"), R("pg_namespace"), R("pg_policy"),
    R("pg_proc"), R("pg_publication"), R("pg_publication_namespace"), R("pg_publication_rel"),
    R("pg_range"), R("pg_roles"), R("pg_user"), R("pg_settings"), R("pg_statistic_ext"),
    R("pg_tables"), R("pg_tablespace"), R("pg_trigger"), R("pg_type"), R("pg_views"),
    R("pg_matviews"), R("pg_sequences"), R("pg_sequence"), R("pg_rewrite"),
    R("pg_partitioned_table"), R("pg_foreign_table"), R("pg_event_trigger"),
    R("pg_stat_activity"), R("pg_language"), R("pg_indexes"), R("pg_auth_members"),
    R("pg_authid"), R("pg_shdescription"), R("pg_stat_user_tables"), R("pg_stat_all_tables"),
    R("pg_stat_sys_tables"), R("pg_statio_user_tables"), R("pg_statio_all_tables"),
    R("pg_stat_user_indexes"), R("pg_stat_all_indexes"), R("pg_statio_user_indexes"),
    R("pg_stat_database"), R("pg_opclass"), R("pg_opfamily"), R("pg_operator"),
    R("pg_aggregate"), R("pg_cast"), R("pg_conversion"), R("pg_ts_config"), R("pg_ts_dict"),
    R("pg_ts_parser"), R("pg_ts_template"), R("pg_foreign_server"),
    R("pg_foreign_data_wrapper"), R("pg_user_mapping"), R("pg_user_mappings"), R("pg_locks"),
    R("pg_prepared_xacts"), R("pg_prepared_statements"), R("pg_cursors"),
    R("pg_timezone_names"), R("pg_timezone_abbrevs"), R("pg_available_extensions"),
    R("pg_available_extension_versions"), R("pg_replication_slots"), R("pg_stat_replication"),
    R("pg_default_acl"), R("pg_init_privs"), R("pg_stats"), R("pg_policies"), R("pg_rules"),
    R("pg_shdepend"), R("pg_db_role_setting"), R("pg_group"), R("pg_amop"), R("pg_amproc"),
    R("pg_subscription"), R("pg_publication_tables"), R("pg_largeobject_metadata"),
    R("pg_seclabel"), R("pg_shseclabel"), R("pg_statistic_ext_data"), R("pg_transform"),
    R("pg_stat_ssl"), R("pg_stat_gssapi"), R("pg_stat_bgwriter"), R("pg_stat_archiver"),
};

static const char *const info_relations[][2] = {
    I("tables"), I("columns"), I("schemata"), I("views"), I("table_constraints"),
    I("key_column_usage"), I("routines"), I("referential_constraints"), I("check_constraints"),
    I("sequences"), I("parameters"), I("constraint_column_usage"),
    I("constraint_table_usage"), I("triggers"), I("table_privileges"), I("role_table_grants"),
    I("column_privileges"), I("role_column_grants"), I("usage_privileges"),
    I("role_usage_grants"), I("enabled_roles"), I("applicable_roles"), I("character_sets"),
    I("collations"), I("domains"), I("element_types"), I("attributes"),
    I("user_defined_types"), I("view_table_usage"), I("view_column_usage"),
    I("information_schema_catalog_name"), I("column_udt_usage"), I("domain_constraints"),
    I("routine_privileges"), I("foreign_tables"), I("foreign_servers"),
};

/* Set-returning functions called in FROM, read as tables. */
static const char *const table_functions[][2] = {
    {"pg_get_keywords", "vt:pg_get_keywords"},
    {"pg_show_all_settings", "vt:pg_settings"},
    {"pg_timezone_names", "vt:pg_timezone_names"},
    {"pg_timezone_abbrevs", "vt:pg_timezone_abbrevs"},
    {"pg_cursor", "vt:pg_cursors"},
    {"pg_prepared_statement", "vt:pg_prepared_statements"},
    {"pg_available_extensions", "vt:pg_available_extensions"},
    {"pg_listening_channels", "vt:listening_channels"},
};

#undef R
#undef I

static const char *find(const char *const (*list)[2], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i][0], name))
            return list[i][1];
    return NULL;
}

#define FIND(list, name) find(list, sizeof list / sizeof list[0], name)

const char *pgw_catalog_relation(const char *schema, const char *name)
{
    if (!strcmp(schema, "information_schema"))
        return FIND(info_relations, name);
    return FIND(relations, name);
}

const char *pgw_catalog_table_function(const char *name)
{
    return FIND(table_functions, name);
}

/* Catalog functions: PostgreSQL name -> ours. Functions DuckDB has with the
 * PostgreSQL meaning (array_to_string, string_agg, ...) stay on the gate's
 * allowlist instead. */
static const char *const functions[][2] = {
    {"version", "vt:version"},
    {"current_setting", "vt:current_setting"},
    {"set_config", "vt:set_config"},
    {"current_database", "vt:current_database"},
    {"current_catalog", "vt:current_database"},
    {"current_schema", "vt:current_schema"},
    {"current_schemas", "vt:current_schemas"},
    {"current_user", "vt:current_user"},
    {"session_user", "vt:current_user"},
    {"user", "vt:current_user"},
    {"current_role", "vt:current_user"},
    {"pg_get_userbyid", "vt:pg_get_userbyid"},
    {"string_to_array", "vt:string_to_array"},
    {"pg_table_is_visible", "vt:visible"},
    {"pg_type_is_visible", "vt:visible"},
    {"pg_function_is_visible", "vt:visible"},
    {"pg_opclass_is_visible", "vt:visible"},
    {"pg_collation_is_visible", "vt:visible"},
    {"pg_conversion_is_visible", "vt:visible"},
    {"pg_operator_is_visible", "vt:visible"},
    {"pg_ts_config_is_visible", "vt:visible"},
    {"format_type", "vt:format_type"},
    {"pg_get_expr", "vt:null2"},
    {"pg_get_constraintdef", "vt:null2"},
    {"pg_get_indexdef", "vt:null2"},
    {"pg_get_viewdef", "vt:null2"},
    {"pg_get_triggerdef", "vt:null2"},
    {"pg_get_ruledef", "vt:null2"},
    {"pg_get_partkeydef", "vt:null2"},
    {"pg_get_partition_constraintdef", "vt:null2"},
    {"pg_get_statisticsobjdef_columns", "vt:null2"},
    {"pg_get_function_result", "vt:null2"},
    {"pg_get_function_arguments", "vt:null2"},
    {"pg_get_function_identity_arguments", "vt:null2"},
    {"pg_get_functiondef", "vt:null2"},
    {"pg_get_serial_sequence", "vt:null2"},
    {"pg_tablespace_location", "vt:null2"},
    {"obj_description", "vt:obj_description"},
    {"col_description", "vt:null2"},
    {"shobj_description", "vt:null2"},
    {"pg_encoding_to_char", "vt:pg_encoding_to_char"},
    {"pg_client_encoding", "vt:utf8"},
    {"getdatabaseencoding", "vt:utf8"},
    {"has_table_privilege", "vt:has_privilege"},
    {"has_schema_privilege", "vt:has_privilege"},
    {"has_database_privilege", "vt:has_privilege"},
    {"has_column_privilege", "vt:has_privilege"},
    {"has_any_column_privilege", "vt:has_privilege"},
    {"has_function_privilege", "vt:has_privilege"},
    {"has_sequence_privilege", "vt:has_privilege"},
    {"has_type_privilege", "vt:has_privilege"},
    {"has_language_privilege", "vt:has_privilege"},
    {"has_tablespace_privilege", "vt:has_privilege"},
    {"has_server_privilege", "vt:has_privilege"},
    {"has_foreign_data_wrapper_privilege", "vt:has_privilege"},
    {"pg_has_role", "vt:has_privilege"},
    {"pg_relation_is_publishable", "vt:false1"},
    {"pg_is_other_temp_schema", "vt:false1"},
    {"pg_is_in_recovery", "vt:false0"},
    {"pg_is_wal_replay_paused", "vt:false0"},
    {"pg_my_temp_schema", "vt:zero0"},
    {"pg_backend_pid", "vt:pg_backend_pid"},
    {"array_upper", "vt:array_upper"},
    {"array_lower", "vt:array_lower"},
    {"array_ndims", "vt:array_ndims"},
    {"array_dims", "vt:array_dims"},
    {"to_regclass", "vt:to_regclass"},
    {"to_regtype", "vt:to_regtype"},
    {"to_regnamespace", "vt:to_regnamespace"},
    {"to_regproc", "vt:regproc_in"},
    {"to_regprocedure", "vt:regproc_in"},
    {"to_regrole", "vt:regrole_in"},
    {"pg_relation_size", "vt:relation_size"},
    {"pg_total_relation_size", "vt:relation_size"},
    {"pg_table_size", "vt:relation_size"},
    {"pg_indexes_size", "vt:indexes_size"},
    {"pg_database_size", "vt:database_size"},
    {"pg_tablespace_size", "vt:database_size"},
    {"pg_typeof", "vt:pg_typeof"},
    {"generate_series", "vt:generate_series"},
    {"pg_column_size", "vt:nullint"},
    {"pg_size_pretty", "vt:pg_size_pretty"},
    {"pg_stat_get_numscans", "vt:zero1"},
    {"pg_stat_get_tuples_returned", "vt:zero1"},
    {"pg_stat_get_tuples_fetched", "vt:zero1"},
    {"pg_stat_get_tuples_inserted", "vt:zero1"},
    {"pg_stat_get_tuples_updated", "vt:zero1"},
    {"pg_stat_get_tuples_deleted", "vt:zero1"},
    {"pg_stat_get_tuples_hot_updated", "vt:zero1"},
    {"pg_stat_get_dead_tuples", "vt:zero1"},
    {"pg_stat_get_blocks_fetched", "vt:zero1"},
    {"pg_stat_get_blocks_hit", "vt:zero1"},
    {"pg_stat_get_live_tuples", "vt:live_tuples"},
    {"pg_stat_get_last_vacuum_time", "vt:nullts1"},
    {"pg_stat_get_last_autovacuum_time", "vt:nullts1"},
    {"pg_stat_get_last_analyze_time", "vt:nullts1"},
    {"pg_stat_get_last_autoanalyze_time", "vt:nullts1"},
    {"pg_postmaster_start_time", "vt:pg_postmaster_start_time"},
    {"pg_conf_load_time", "vt:pg_postmaster_start_time"},
    {"txid_current", "vt:txid_current"},
    {"pg_current_xact_id", "vt:txid_current"},
    {"txid_current_if_assigned", "vt:nullint0"},
    {"pg_current_xact_id_if_assigned", "vt:nullint0"},
    {"inet_server_addr", "vt:inet_server_addr"},
    {"inet_server_port", "vt:inet_server_port"},
    {"inet_client_addr", "vt:inet_client_addr"},
    {"inet_client_port", "vt:inet_client_port"},
    {"statement_timestamp", "vt:now"},
    {"transaction_timestamp", "vt:now"},
    {"clock_timestamp", "vt:now"},
    {"timeofday", "vt:timeofday"},
    {"quote_ident", "vt:quote_ident"},
    {"quote_literal", "vt:quote_literal"},
    {"quote_nullable", "vt:quote_nullable"},
    {"parse_ident", "vt:parse_ident"},
    {"_pg_expandarray", "vt:_pg_expandarray"},
    /* PostgreSQL's JSON builders and aggregates: DuckDB's json extension's */
    {"json_build_object", "json_object"},
    {"jsonb_build_object", "json_object"},
    {"json_build_array", "json_array"},
    {"jsonb_build_array", "json_array"},
    /* json[b]_agg and json[b]_object_agg: dialect.c (they take ORDER BY) */
    {"to_jsonb", "to_json"},
    /* PostgreSQL's JSON accessors: paths of keys and array indexes, its
     * type names, an integer length (catalog_sql.c) */
    {"json_extract_path", "vt:json_extract_path"},
    {"jsonb_extract_path", "vt:json_extract_path"},
    {"json_extract_path_text", "vt:json_extract_path_text"},
    {"jsonb_extract_path_text", "vt:json_extract_path_text"},
    {"json_array_length", "vt:json_array_length"},
    {"jsonb_array_length", "vt:json_array_length"},
    {"json_typeof", "vt:json_typeof"},
    {"jsonb_typeof", "vt:json_typeof"},
    {"jsonb_pretty", "json_pretty"},
    /* jsonb's operators (lexer.c's stand-ins for -> ->> #> #>> ? ?| ?&, @> and <@
     * where dialect.c sees JSON) and the functions behind them; a text[]
     * constant argument is a list by then (dialect.c) */
    {PGW_OP_GET, "vt:json_get"},
    {PGW_OP_GET_TEXT, "vt:json_get_text"},
    {PGW_OP_PATH, "vt:json_path"},
    {PGW_OP_PATH_TEXT, "vt:json_path_text"},
    {PGW_OP_EXISTS, "vt:jsonb_exists"},
    {PGW_OP_EXISTS_ANY, "vt:jsonb_exists_any"},
    {PGW_OP_EXISTS_ALL, "vt:jsonb_exists_all"},
    {"jsonb_exists", "vt:jsonb_exists"},
    {"jsonb_exists_any", "vt:jsonb_exists_any"},
    {"jsonb_exists_all", "vt:jsonb_exists_all"},
    {"jsonb_contains", "vt:jsonb_contains"},
    {"jsonb_set", "vt:jsonb_set"},
    {"jsonb_insert", "vt:jsonb_insert"},
    {"vt:jsonb_contains", "vt:jsonb_contains"},
    {"vt:json_keys", "vt:json_keys"},
    {"vt:json_object", "vt:json_object"},
    {"unnest", "unnest"}, /* x = ANY(array): DuckDB's plan calls it as a scalar */
    /* dialect.c's json_array_elements[_text] (a client writing the name gets
     * the same list) */
    {"vt:json_elements", "vt:json_elements"},
    {"vt:json_elements_text", "vt:json_elements_text"},
    {"vt:json_pairs", "vt:json_pairs"},
    /* PostgreSQL's regular-expression operators match anywhere in the
     * string; DuckDB's parser makes `~` a full match. */
    {"regexp_full_match", "regexp_matches"},
    {"~*", "vt:imatch"},
    {"!~*", "vt:inotmatch"},
};

const char *pgw_catalog_function(const char *name)
{
    return FIND(functions, name);
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
    /* DuckDB has one JSON type: jsonb values are json (OID 114) */
    {"jsonb", "vt:jsonb", "vt:jsonb"},
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

/* DuckDB's type names (typeof) of the scalar types, for pg_typeof: their
 * PostgreSQL type is pgw_type_of's, so both answer alike. DECIMAL(p,s) and
 * ENUM(...) carry their parameters in the name ("vt:duck_scalar_oid"). */
static const struct {
    const char *name;
    duckdb_type id;
} duck_types[] = {
    {"BOOLEAN", DUCKDB_TYPE_BOOLEAN}, {"TINYINT", DUCKDB_TYPE_TINYINT},
    {"SMALLINT", DUCKDB_TYPE_SMALLINT}, {"INTEGER", DUCKDB_TYPE_INTEGER},
    {"BIGINT", DUCKDB_TYPE_BIGINT}, {"HUGEINT", DUCKDB_TYPE_HUGEINT},
    {"UTINYINT", DUCKDB_TYPE_UTINYINT}, {"USMALLINT", DUCKDB_TYPE_USMALLINT},
    {"UINTEGER", DUCKDB_TYPE_UINTEGER}, {"UBIGINT", DUCKDB_TYPE_UBIGINT},
    {"UHUGEINT", DUCKDB_TYPE_UHUGEINT}, {"FLOAT", DUCKDB_TYPE_FLOAT},
    {"DOUBLE", DUCKDB_TYPE_DOUBLE}, {"VARCHAR", DUCKDB_TYPE_VARCHAR},
    {"BLOB", DUCKDB_TYPE_BLOB}, {"DATE", DUCKDB_TYPE_DATE}, {"TIME", DUCKDB_TYPE_TIME},
    {"TIME WITH TIME ZONE", DUCKDB_TYPE_TIME_TZ}, {"TIMESTAMP", DUCKDB_TYPE_TIMESTAMP},
    {"TIMESTAMP_S", DUCKDB_TYPE_TIMESTAMP_S}, {"TIMESTAMP_MS", DUCKDB_TYPE_TIMESTAMP_MS},
    {"TIMESTAMP_NS", DUCKDB_TYPE_TIMESTAMP_NS},
    {"TIMESTAMP WITH TIME ZONE", DUCKDB_TYPE_TIMESTAMP_TZ},
    {"INTERVAL", DUCKDB_TYPE_INTERVAL}, {"UUID", DUCKDB_TYPE_UUID}, {"BIT", DUCKDB_TYPE_BIT},
    {"BIGNUM", DUCKDB_TYPE_BIGNUM}, {"\"NULL\"", DUCKDB_TYPE_SQLNULL},
};

static void add_duck_types(struct strbuf *q)
{
    sb_adds(q, "INSERT INTO \"vt:ducktypes\" VALUES ('JSON', 114)");
    for (size_t i = 0; i < sizeof duck_types / sizeof duck_types[0]; i++) {
        duckdb_logical_type t = duckdb_create_logical_type(duck_types[i].id);
        sb_adds(q, ", (");
        sb_add_sql_string(q, duck_types[i].name);
        sb_addf(q, ", %u)", (unsigned)pgw_type_of(t).oid);
        duckdb_destroy_logical_type(&t);
    }
    sb_adds(q, ";");
}

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

static enum vt_err create_objects(duckdb_connection con, struct vt_error *err)
{
    if (run(con, pgw_catalog_ddl, err) != VT_ERR_OK)
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
    sb_adds(&q, ";\n");
    add_duck_types(&q);
    enum vt_err rc = q.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL)
                                : run(con, q.buf, err);
    sb_release(&q);
    return rc;
}

/* All of it or nothing: a connection where it failed can try again. */
static enum vt_err create_catalog(duckdb_connection con, struct vt_error *err)
{
    if (run(con, "BEGIN TRANSACTION", err) != VT_ERR_OK)
        return err->code;
    if (create_objects(con, err) != VT_ERR_OK) {
        struct vt_error ignored = {0};
        run(con, "ROLLBACK", &ignored);
        return err->code;
    }
    return run(con, "COMMIT", err);
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
                 "DELETE FROM \"vt:pg_description\"; DELETE FROM \"vt:relsize\";",
            err) != VT_ERR_OK)
        return err->code;
    uint32_t *oids = calloc(n ? n : 1, sizeof *oids);
    if (!oids)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    table_oids(t, n, oids);
    duckdb_prepared_statement cls = NULL, att = NULL, desc = NULL, size = NULL;
    enum vt_err rc = VT_ERR_OK;
    if (duckdb_prepare(con,
                       "INSERT INTO \"vt:pg_class\" VALUES ($1, $2, 2200, 0, 0, 10, 2, $1, 0, "
                       "$5, $3, 0, 0, false, false, 'p', 'r', $4, 0, false, false, false, false, "
                       "false, true, 'd', false, 0, 0, 0, NULL, NULL, NULL)",
                       &cls) != DuckDBSuccess ||
        duckdb_prepare(con,
                       "INSERT INTO \"vt:pg_attribute\" VALUES ($1, $2, $3, -1, $4, $5, $6, -1, "
                       "$7, false, 'i', 'x', '', $8, false, false, '', '', false, true, 0, $9, "
                       "NULL, NULL, NULL, NULL)",
                       &att) != DuckDBSuccess ||
        duckdb_prepare(con, "INSERT INTO \"vt:pg_description\" VALUES ($1, 1259, 0, $2)",
                       &desc) != DuckDBSuccess ||
        duckdb_prepare(con, "INSERT INTO \"vt:relsize\" VALUES ($1, $2)", &size) !=
            DuckDBSuccess) {
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
        int64_t bytes = t[i].bytes > 0 ? t[i].bytes : 0;
        int64_t pages = (bytes + 8191) / 8192;
        duckdb_bind_int32(cls, 5, (int32_t)(pages > INT32_MAX ? INT32_MAX : pages));
        duckdb_result res;
        if (duckdb_execute_prepared(cls, &res) != DuckDBSuccess)
            rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
        duckdb_destroy_result(&res);
        duckdb_bind_int64(size, 1, oids[i]);
        duckdb_bind_int64(size, 2, bytes);
        if (rc == VT_ERR_OK) {
            if (duckdb_execute_prepared(size, &res) != DuckDBSuccess)
                rc = vt_error_set(err, VT_ERR_INTERNAL, "catalog: %s", duckdb_result_error(&res));
            duckdb_destroy_result(&res);
        }
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
    duckdb_destroy_prepare(&size);
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
