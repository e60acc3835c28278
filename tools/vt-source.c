/*
 * vt-source: resolves one Delta table or S3 parquet source the way a dataset
 * build does and prints what it serves. A development and test tool (the S3
 * and Delta tests in tests/e2e drive it), not part of the service.
 *
 *   vt-source [options] LOCATION
 *     --kind delta|parquet      (default: delta unless the location ends in .parquet or has a glob)
 *     --lazy                    resolve for a lazy view (S3: object cache instead of temp files)
 *     --s3-endpoint URL --s3-region R --path-style --allow-http
 *     --partitioning auto|hive|none
 *     --key-env NAME --secret-env NAME --token-env NAME   (credential env overrides)
 *     --cache-dir D --cache-max-bytes N --temp-dir D --name DATASET
 *     --columns a,b             projection
 *     --version N | --timestamp T   Delta time travel (source.version / source.timestamp)
 *     --sql                     print the SELECT instead of running it
 *     --s3-op head|get|range:OFF:LEN   one raw S3 request on LOCATION (an object):
 *                               prints {"ok":true,"size":..,"etag":..} or
 *                               {"ok":true,"len":..,"text":..}
 *
 * Output: one JSON line {"ok":true,"version":..,"files":..,"total_bytes":..,
 * "rows":N,"columns":[[name,type],..]} then one line per row (to_json of the
 * row, rows sorted) -- or {"ok":false,"code":..,"error":..,"access_denied":..}
 * with exit status 1.
 */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sources/delta.h"
#include "sources/s3.h"
#include "sources/source.h"
#include "util/strbuf.h"

static void print_error(enum vt_err code, const char *msg, bool denied)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, "{\"ok\":false,\"code\":");
    sb_add_json_string(&sb, vt_err_code(code), strlen(vt_err_code(code)));
    sb_adds(&sb, ",\"error\":");
    sb_add_json_string(&sb, msg, strlen(msg));
    sb_addf(&sb, ",\"access_denied\":%s}", denied ? "true" : "false");
    puts(sb.buf);
    sb_release(&sb);
}

/* One request through the S3 client (HEAD, GET, ranged GET) for the tests. */
static int raw_s3_op(const struct vt_dataset_config *ds, const char *op)
{
    struct vt_error err = {0};
    struct s3_url u;
    struct s3_client *c = NULL;
    struct s3_outcome oc = {0};
    enum vt_err rc = s3_url_parse(ds->location, &u, &err);
    if (rc == VT_ERR_OK)
        rc = s3_client_create(&ds->s3, &c, &err);
    struct strbuf out;
    sb_init(&out, 0);
    if (rc == VT_ERR_OK && !strcmp(op, "head")) {
        struct s3_object o;
        rc = s3_head(c, u.bucket, u.key, &o, &oc, &err);
        if (rc == VT_ERR_OK) {
            sb_addf(&out, "{\"ok\":true,\"size\":%lld,\"etag\":", (long long)o.size);
            sb_add_json_string(&out, o.etag ? o.etag : "", strlen(o.etag ? o.etag : ""));
            sb_addc(&out, '}');
            s3_object_release(&o);
        }
    } else if (rc == VT_ERR_OK) {
        long long off = 0, len = -1;
        if (strncmp(op, "range:", 6) == 0)
            sscanf(op + 6, "%lld:%lld", &off, &len);
        char *buf = NULL;
        size_t n = 0;
        rc = s3_get_mem(c, u.bucket, u.key, off, len, 1 << 20, &buf, &n, &oc, &err);
        if (rc == VT_ERR_OK) {
            sb_addf(&out, "{\"ok\":true,\"len\":%zu,\"text\":", n);
            sb_add_json_string(&out, buf, n);
            sb_addc(&out, '}');
        }
        free(buf);
    }
    if (rc == VT_ERR_OK)
        puts(out.buf);
    else
        print_error(rc, vt_error_message(&err), oc.access_denied);
    sb_release(&out);
    s3_client_destroy(c);
    s3_url_release(&u);
    return rc == VT_ERR_OK ? 0 : 1;
}

static int split_columns(const char *s, struct strvec *out)
{
    out->items = NULL;
    out->len = 0;
    if (!s || !*s)
        return 0;
    char *copy = strdup(s);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        out->items = realloc(out->items, (out->len + 1) * sizeof *out->items);
        out->items[out->len++] = strdup(tok);
    }
    free(copy);
    return 0;
}

int main(int argc, char **argv)
{
    struct vt_dataset_config ds;
    memset(&ds, 0, sizeof ds);
    ds.name = "vt-source";
    int kind = -1;
    struct source_context ctx = {0};
    bool sql_only = false;
    const char *s3_op = NULL;
    const char *columns = NULL;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--kind") && v) {
            kind = !strcmp(v, "delta") ? CFG_SOURCE_DELTA : CFG_SOURCE_PARQUET;
            i++;
        } else if (!strcmp(a, "--lazy")) {
            ctx.for_lazy = true;
            ds.lazy = true;
        } else if (!strcmp(a, "--s3-endpoint") && v) {
            ds.s3.endpoint = (char *)v;
            i++;
        } else if (!strcmp(a, "--s3-region") && v) {
            ds.s3.region = (char *)v;
            i++;
        } else if (!strcmp(a, "--path-style")) {
            ds.s3.addressing_style = CFG_S3_ADDRESSING_PATH;
        } else if (!strcmp(a, "--allow-http")) {
            ds.s3.allow_http = true;
        } else if (!strcmp(a, "--partitioning") && v) {
            ds.s3.partitioning = !strcmp(v, "hive")   ? CFG_S3_PARTITIONING_HIVE
                                 : !strcmp(v, "none") ? CFG_S3_PARTITIONING_NONE
                                                      : CFG_S3_PARTITIONING_AUTO;
            i++;
        } else if (!strcmp(a, "--key-env") && v) {
            ds.s3.access_key_id_env = (char *)v;
            i++;
        } else if (!strcmp(a, "--secret-env") && v) {
            ds.s3.secret_access_key_env = (char *)v;
            i++;
        } else if (!strcmp(a, "--token-env") && v) {
            ds.s3.session_token_env = (char *)v;
            i++;
        } else if (!strcmp(a, "--cache-dir") && v) {
            ctx.cache_dir = v;
            i++;
        } else if (!strcmp(a, "--cache-max-bytes") && v) {
            ctx.cache_max_bytes = strtoll(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--temp-dir") && v) {
            ctx.temp_dir = v;
            i++;
        } else if (!strcmp(a, "--name") && v) {
            ds.name = (char *)v;
            i++;
        } else if (!strcmp(a, "--version") && v) {
            ds.source_version = strtoll(v, NULL, 10);
            ds.source_version_set = true;
            i++;
        } else if (!strcmp(a, "--timestamp") && v) {
            ds.source_timestamp = (char *)v;
            i++;
        } else if (!strcmp(a, "--columns") && v) {
            columns = v;
            i++;
        } else if (!strcmp(a, "--s3-op") && v) {
            s3_op = v;
            i++;
        } else if (!strcmp(a, "--sql")) {
            sql_only = true;
        } else {
            fprintf(stderr, "vt-source: unknown option %s\n", a);
            return 2;
        }
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: vt-source [options] LOCATION\n");
        return 2;
    }
    ds.location = argv[i];
    if (s3_op)
        return raw_s3_op(&ds, s3_op);
    if (kind < 0) {
        size_t n = strlen(ds.location);
        bool pq = (n > 8 && !strcmp(ds.location + n - 8, ".parquet")) ||
                  strpbrk(ds.location, "*?[") != NULL;
        kind = pq ? CFG_SOURCE_PARQUET : CFG_SOURCE_DELTA;
    }
    ds.kind = (enum cfg_source_kind)kind;
    struct source_snapshot snap;
    struct vt_error err = {0};
    bool denied = false;
    enum vt_err rc;
    rc = source_resolve(&ds, &ctx, &snap, &denied, &err);
    /* The rows are read whole here: a lazy S3 snapshot fetches its objects. */
    struct range_cache_lease *holds = NULL;
    if (rc == VT_ERR_OK && snap.lazy)
        rc = source_lazy_read_all(snap.lazy, 0, NULL, &holds, &err);
    if (rc != VT_ERR_OK) {
        print_error(rc, vt_error_message(&err), denied);
        return 1;
    }
    struct strvec cols;
    split_columns(columns, &cols);
    struct strbuf sql;
    sb_init(&sql, 0);
    rc = source_select_sql(&snap, &cols, &sql, &err);
    for (size_t k = 0; k < cols.len; k++)
        free(cols.items[k]);
    free(cols.items);
    int status = 0;
    if (rc != VT_ERR_OK) {
        print_error(rc, vt_error_message(&err), false);
        status = 1;
        goto out;
    }
    if (sql_only) {
        puts(sql.buf);
        goto out;
    }
    duckdb_database db;
    duckdb_connection con;
    duckdb_open(NULL, &db);
    source_functions_register(db, &err);
    duckdb_connect(db, &con);
    duckdb_result res;
    duckdb_query(con, "SET TimeZone = 'UTC'", &res);
    duckdb_destroy_result(&res);
    struct strbuf q;
    sb_init(&q, 0);
    sb_addf(&q, "CREATE TABLE t AS %s", sql.buf);
    if (duckdb_query(con, q.buf, &res) != DuckDBSuccess) {
        print_error(VT_ERR_BUILD_FAILED, duckdb_result_error(&res), false);
        status = 1;
    } else {
        duckdb_destroy_result(&res);
        duckdb_query(con,
                     "SELECT (SELECT count(*) FROM t), (SELECT to_json(list([column_name, "
                     "column_type]))::VARCHAR FROM (DESCRIBE t))",
                     &res);
        char *n = duckdb_value_varchar(&res, 0, 0);
        char *c = duckdb_value_varchar(&res, 1, 0);
        struct strbuf head;
        sb_init(&head, 0);
        sb_adds(&head, "{\"ok\":true,\"version\":");
        sb_add_json_string(&head, snap.version ? snap.version : "", strlen(snap.version ? snap.version : ""));
        sb_addf(&head, ",\"files\":%zu,\"total_bytes\":%lld,\"temp_files\":%zu,\"rows\":%s,\"columns\":%s}",
                snap.n_files, (long long)snap.total_bytes, snap.n_temp_files, n, c);
        puts(head.buf);
        sb_release(&head);
        duckdb_free(n);
        duckdb_free(c);
        duckdb_destroy_result(&res);
        if (duckdb_query(con, "SELECT to_json(t)::VARCHAR AS j FROM t ORDER BY j", &res) ==
            DuckDBSuccess) {
            idx_t rows = duckdb_row_count(&res);
            for (idx_t r = 0; r < rows; r++) {
                char *v = duckdb_value_varchar(&res, 0, r);
                puts(v ? v : "null");
                duckdb_free(v);
            }
        }
    }
    duckdb_destroy_result(&res);
    sb_release(&q);
    duckdb_disconnect(&con);
    duckdb_close(&db);
out:
    sb_release(&sql);
    source_lazy_read_release(holds);
    source_snapshot_release(&snap); /* the downloads go with it */
    return status;
}
