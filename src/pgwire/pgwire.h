/*
 * pgwire: the PostgreSQL frontend/backend protocol (version 3.0) in front of
 * the one execution path. PostgreSQL clients (psql, psycopg, node pg, JDBC
 * tools) connect to `[server.pgwire]`, see every published dataset as a table
 * in schema `public`, and run read-only SQL through the same SQL gate and
 * executor as POST /api/v1/sql: a statement is checked (src/sql), the datasets
 * it reads are pinned at their current generation, exec runs it on an engine
 * worker's connection (so HTTP and pgwire share the concurrency cap), and a
 * DataRow sink turns DuckDB chunks into protocol messages.
 *
 *   listener thread (server.c)                 engine worker (session.c)
 *   --------------------------                 --------------------------
 *   accept, SSLRequest -> TLS handshake,       every complete message in the
 *   startup, password, idle timeout,     ──►   input buffer: Query, Parse, Bind,
 *   connection cap, CancelRequest              Describe, Execute, Sync, Close...
 *   (epoll; never blocks)               ◄──    writes results itself (blocking,
 *                                              bounded), then hands back
 *
 * While a job owns a connection the listener only watches for the peer
 * hanging up (which cancels the job); a CancelRequest interrupts the running
 * DuckDB query; request_timeout_ms bounds every statement.
 *
 * The pure parts are public for the unit tests and the fuzz target: message
 * framing and parsing (proto.c), the SQL lexer that splits a simple Query
 * into statements and recognises the session statements clients and pools
 * send (lexer.c), and the value encoders of the DataRow sink (types.c,
 * values.c).
 */
#ifndef VT_PGWIRE_PGWIRE_H
#define VT_PGWIRE_PGWIRE_H

#include <duckdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/errors.h"
#include "util/strbuf.h"

struct auth_policy;
struct cat_catalog;
struct eng_pool;

/* ------------------------------------------------------------ the listener */

struct pgw_server;

struct pgw_server_options {
    const struct vt_config *cfg;   /* server.pgwire, server.request_timeout_ms */
    struct cat_catalog *catalog;
    struct eng_pool *pool;         /* the query pool (shared with HTTP) */
    const struct auth_policy *auth; /* [auth]: bearer tokens as passwords (may be NULL) */
};

/* Binds, loads the TLS certificate when configured and starts the listener
 * thread. NULL with err set (bind failure, bad certificate or key). */
struct pgw_server *pgw_server_start(const struct pgw_server_options *o, struct vt_error *err);
/* The bound port (the configured one, or the one the OS chose for port 0). */
int pgw_server_port(const struct pgw_server *s);
/* Whether TLS is configured (for the startup log line). */
bool pgw_server_tls(const struct pgw_server *s);
/* Shutdown, first half: stop accepting, close idle sessions (57P01). */
void pgw_server_shutdown(struct pgw_server *s);
/* Second half: lets running statements finish until drain_until_ms
 * (monotonic), then cancels them, waits (VT_SHUTDOWN_JOIN_SECS) for the jobs
 * to hand their connections back, stops the thread and frees everything.
 * false when a job did not come back (the server is then left allocated:
 * the caller exits). */
bool pgw_server_destroy(struct pgw_server *s, int64_t drain_until_ms);

/* ------------------------------------------------- framing (proto.c, pure) */

/* Startup-phase codes (the int32 after the length of the first packets). */
#define PGW_PROTOCOL_3_0 196608        /* 3 << 16 */
#define PGW_CANCEL_REQUEST_CODE 80877102
#define PGW_SSL_REQUEST_CODE 80877103
#define PGW_GSSENC_REQUEST_CODE 80877104

enum pgw_frame_rc {
    PGW_FRAME_OK,
    PGW_FRAME_NEED,       /* incomplete: read more */
    PGW_FRAME_BAD,        /* a length below the minimum */
    PGW_FRAME_TOO_BIG,    /* a length above the limit */
};

struct pgw_frame {
    char type;                      /* message type; 0 for startup-phase packets */
    const unsigned char *body;
    size_t body_len;
    size_t total;                   /* bytes the frame takes in the buffer */
};

/* A regular message at buf: type byte, int32 length (counting itself), body
 * of at most max_body bytes. */
enum pgw_frame_rc pgw_frame_message(const unsigned char *buf, size_t len, size_t max_body,
                                    struct pgw_frame *out);
/* A startup-phase packet at buf: int32 length (counting itself), body (at
 * least the 4-byte code; at most VT_PGWIRE_MAX_STARTUP_BYTES in all). */
enum pgw_frame_rc pgw_frame_startup(const unsigned char *buf, size_t len, struct pgw_frame *out);

/* A bounds-checked reader over one message body: a read past the end sets
 * `bad` and returns zero/NULL, so a parser reads everything and checks once. */
struct pgw_reader {
    const unsigned char *p, *end;
    bool bad;
};

void pgw_reader_init(struct pgw_reader *r, const unsigned char *body, size_t len);
uint8_t pgw_get_u8(struct pgw_reader *r);
int16_t pgw_get_i16(struct pgw_reader *r);
int32_t pgw_get_i32(struct pgw_reader *r);
/* A NUL-terminated string inside the body (NULL and bad when there is no NUL
 * before the end). */
const char *pgw_get_str(struct pgw_reader *r, size_t *out_len);
const unsigned char *pgw_get_bytes(struct pgw_reader *r, size_t n);
/* True when everything was read and nothing was missing. */
bool pgw_reader_done(const struct pgw_reader *r);

/* The body of a startup-phase packet. */
struct pgw_startup {
    int32_t code;                   /* PGW_*_CODE, or a protocol version */
    /* protocol 3.x: name/value pairs, pointers into the body */
    size_t nparams;
    const char *names[64];
    const char *values[64];
    /* CancelRequest */
    int32_t pid, secret;
};

/* Parses a startup packet body. PG_PROTOCOL for malformed packets (missing
 * terminator, odd pairs, a cancel request of the wrong size, too many
 * parameters). Unsupported major versions are for the caller to refuse. */
enum vt_err pgw_parse_startup(const unsigned char *body, size_t len, struct pgw_startup *out,
                              struct vt_error *err);

/* Frontend messages after startup (pointers into the body). */
struct pgw_parse_msg {
    const char *name;               /* "" = the unnamed statement */
    const char *query;
    size_t query_len;
    uint16_t nparams;
    const unsigned char *oids;      /* nparams big-endian uint32 */
};

struct pgw_bind_msg {
    const char *portal;
    const char *statement;
    uint16_t nformats;              /* 0, 1 (applies to all) or nparams */
    const unsigned char *formats;   /* big-endian int16 each: 0 text, 1 binary */
    uint16_t nparams;
    const unsigned char *values;    /* nparams of (int32 length or -1, bytes) */
    uint16_t nresult_formats;
    const unsigned char *result_formats;
};

/* One bound value (len -1: NULL). */
struct pgw_value {
    const unsigned char *data;
    int32_t len;
    int16_t format;                 /* 0 text, 1 binary */
};

struct pgw_target_msg {             /* Describe, Close */
    char kind;                      /* 'S' statement or 'P' portal */
    const char *name;
};

struct pgw_execute_msg {
    const char *portal;
    int32_t max_rows;               /* <= 0: all rows */
};

enum vt_err pgw_parse_query(const unsigned char *body, size_t len, const char **out_sql,
                            size_t *out_len, struct vt_error *err);
enum vt_err pgw_parse_parse(const unsigned char *body, size_t len, struct pgw_parse_msg *out,
                            struct vt_error *err);
/* Checks the whole message (every length inside the body, formats 0 or 1,
 * format count 0, 1 or nparams; at most VT_PGWIRE_MAX_PARAMS). */
enum vt_err pgw_parse_bind(const unsigned char *body, size_t len, struct pgw_bind_msg *out,
                           struct vt_error *err);
/* The values of a checked Bind (out has room for msg->nparams). */
void pgw_bind_values(const struct pgw_bind_msg *msg, struct pgw_value *out);
/* The format of result column i of a checked Bind. */
int16_t pgw_bind_result_format(const struct pgw_bind_msg *msg, size_t i);
enum vt_err pgw_parse_target(const unsigned char *body, size_t len, struct pgw_target_msg *out,
                             struct vt_error *err);
enum vt_err pgw_parse_execute(const unsigned char *body, size_t len, struct pgw_execute_msg *out,
                              struct vt_error *err);
/* PasswordMessage ('p'): the password (NUL-terminated in the body). */
enum vt_err pgw_parse_password(const unsigned char *body, size_t len, const char **out_pw,
                               struct vt_error *err);

/* -------------------------------------------- backend messages (proto.c) */

/* Starts a message of `type` at the end of out (its length is patched by
 * pgw_msg_end); returns the offset to pass to pgw_msg_end. */
size_t pgw_msg_begin(struct strbuf *out, char type);
void pgw_msg_end(struct strbuf *out, size_t start);
void pgw_put_u8(struct strbuf *out, uint8_t v);
void pgw_put_i16(struct strbuf *out, int16_t v);
void pgw_put_i32(struct strbuf *out, int32_t v);
void pgw_put_str(struct strbuf *out, const char *s); /* with its NUL */

void pgw_write_auth(struct strbuf *out, int32_t code); /* 0 ok, 3 cleartext password */
void pgw_write_parameter_status(struct strbuf *out, const char *name, const char *value);
void pgw_write_backend_key(struct strbuf *out, int32_t pid, int32_t secret);
void pgw_write_ready(struct strbuf *out, char status); /* 'I', 'T' or 'E' */
void pgw_write_command_complete(struct strbuf *out, const char *tag);
void pgw_write_empty(struct strbuf *out, char type); /* a body-less message: '1','2','3','n','s','I','c' */
/* ErrorResponse ('E') or NoticeResponse ('N'): severity ("ERROR", "FATAL",
 * "WARNING", "NOTICE"), SQLSTATE, message, optional detail and hint (NULL). */
void pgw_write_error(struct strbuf *out, char type, const char *severity, const char *sqlstate,
                     const char *message, const char *detail, const char *hint);
void pgw_write_negotiate_version(struct strbuf *out, int32_t newest_minor,
                                 const char *const *unknown, size_t n_unknown);

/* -------------------------------------------------- the lexer (lexer.c, pure) */

/* Tokens of PostgreSQL's SQL lexer, enough to split a simple Query at its
 * top-level semicolons and to read the session statements below. Strings
 * ('..', E'..', U&'..', B'..', X'..'), dollar quotes, quoted identifiers,
 * nested block comments and line comments are one token or skipped whole,
 * so a semicolon inside them never splits. */
enum pgw_tok {
    PGW_TOK_END,
    PGW_TOK_IDENT,      /* unquoted identifier or keyword */
    PGW_TOK_QIDENT,     /* "quoted identifier" */
    PGW_TOK_STRING,     /* any string literal or dollar-quoted string */
    PGW_TOK_NUMBER,
    PGW_TOK_PARAM,      /* $1 */
    PGW_TOK_OP,         /* operator characters */
    PGW_TOK_PUNCT,      /* one of ( ) [ ] , ; : . */
    PGW_TOK_BAD,        /* unterminated string, identifier or comment: the rest of the text */
};

struct pgw_token {
    enum pgw_tok kind;
    size_t pos, len;
};

/* The next token at or after pos (whitespace and comments skipped); returns
 * the position after it. PGW_TOK_END at the end of the text. */
size_t pgw_lex(const char *s, size_t n, size_t pos, struct pgw_token *out);
/* Whether t is the unquoted word `kw` (ASCII case-insensitive). */
bool pgw_tok_word(const char *s, const struct pgw_token *t, const char *kw);

/* One statement of a simple Query: [pos, pos + len) of the text, without the
 * semicolon, trimmed of surrounding whitespace. */
struct pgw_span {
    size_t pos, len;
};

/* Splits at top-level semicolons; statements with no token are left out.
 * Returns how many statements there are (may exceed max: only max are
 * stored). */
size_t pgw_split(const char *s, size_t n, struct pgw_span *out, size_t max);

enum pgw_stmt_kind {
    PGW_STMT_SQL,           /* anything else: for the SQL gate */
    PGW_STMT_EMPTY,
    PGW_STMT_BEGIN,         /* BEGIN [WORK|TRANSACTION] ..., START TRANSACTION ... */
    PGW_STMT_COMMIT,        /* COMMIT, END [WORK|TRANSACTION] */
    PGW_STMT_ROLLBACK,      /* ROLLBACK, ABORT [WORK|TRANSACTION] */
    PGW_STMT_SAVEPOINT,
    PGW_STMT_RELEASE,       /* RELEASE [SAVEPOINT] name */
    PGW_STMT_ROLLBACK_TO,   /* ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] name */
    PGW_STMT_DISCARD_ALL,
    PGW_STMT_DEALLOCATE,    /* name = the statement, all = DEALLOCATE ALL */
    PGW_STMT_RESET,         /* name, or all = RESET ALL */
    PGW_STMT_LISTEN,        /* LISTEN name (no notifications are ever sent) */
    PGW_STMT_UNLISTEN,      /* UNLISTEN * or UNLISTEN name */
    PGW_STMT_SET,           /* SET [SESSION|LOCAL] name {TO|=} value: name, value */
    PGW_STMT_SET_TRANSACTION, /* SET TRANSACTION ..., SET SESSION CHARACTERISTICS ... */
    PGW_STMT_SHOW,          /* SHOW name, SHOW ALL */
    PGW_STMT_COPY_OUT,      /* COPY (query) TO STDOUT ..., COPY table [(cols)] TO STDOUT ... */
    PGW_STMT_EXPLAIN,       /* EXPLAIN [ANALYZE] [VERBOSE] query: query */
    PGW_STMT_DECLARE,       /* DECLARE name [BINARY] ... CURSOR [WITH HOLD] FOR query */
    PGW_STMT_FETCH,         /* FETCH [NEXT | n | ALL | FORWARD [n | ALL]] [FROM | IN] name */
    PGW_STMT_MOVE,          /* MOVE, with FETCH's directions */
    PGW_STMT_CLOSE,         /* CLOSE name | CLOSE ALL */
};

enum pgw_copy_format { PGW_COPY_TEXT, PGW_COPY_CSV, PGW_COPY_BINARY };

#define PGW_FETCH_ALL INT64_MAX /* FETCH ALL, FORWARD ALL */

#define PGW_NAME_MAX 64         /* NAMEDATALEN: longer names are truncated */
#define PGW_SET_VALUE_MAX 1024

struct pgw_stmt {
    enum pgw_stmt_kind kind;
    char name[PGW_NAME_MAX];        /* lower case for settings; as written for statements */
    char value[PGW_SET_VALUE_MAX];  /* SET: list items joined by ", " (strings unquoted) */
    bool is_default;                /* SET name TO DEFAULT */
    bool all;
    /* COPY ... TO STDOUT, EXPLAIN, DECLARE: the query to run (malloc'd; for
     * COPY table [(cols)], `SELECT cols FROM table` made from the tokens). */
    char *query;
    /* FETCH/MOVE: rows (PGW_FETCH_ALL for ALL); a direction that is not
     * forward is `backward`. DECLARE: BINARY, WITH HOLD. EXPLAIN: ANALYZE. */
    int64_t count;
    bool backward;
    bool binary;
    bool hold;
    bool analyze;
    /* COPY output options */
    enum pgw_copy_format copy_format;
    bool copy_header;
    char copy_delimiter;
    char copy_null[16];
};

/* Recognises the statement in [pos, pos+len) of s. Anything it does not
 * recognise exactly is PGW_STMT_SQL (the gate decides: writes, DDL and other
 * SETs are refused there with 25006). PG_PROTOCOL-free: errors in COPY
 * options (unsupported option), cursor statements (SCROLL, a direction that
 * is not forward) come back as err with 0A000/42601 codes and the kind
 * PGW_STMT_SQL is never returned for them. */
enum vt_err pgw_stmt_read(const char *s, size_t len, struct pgw_stmt *out, struct vt_error *err);
void pgw_stmt_release(struct pgw_stmt *st);

/* Stand-ins for PostgreSQL's jsonb operators DuckDB's parser cannot read:
 * operators it parses with the same precedence (PostgreSQL's and DuckDB's
 * grammars give every such operator one class), which no function of
 * DuckDB's has; the dialect maps them to calls (catalog.c). */
#define PGW_OP_GET "&~^"        /* ->  (DuckDB's binds looser than ours: */
#define PGW_OP_GET_TEXT "&~^^"  /* ->> PostgreSQL's j -> 'a' @> x is (j -> 'a') @> x) */
#define PGW_OP_PATH "&~>"       /* #>  */
#define PGW_OP_PATH_TEXT "&~>>" /* #>> */
#define PGW_OP_EXISTS "&~="     /* ?   */
#define PGW_OP_EXISTS_ANY "&~|" /* ?|  */
#define PGW_OP_EXISTS_ALL "&~&" /* ?&  */

/* PostgreSQL spellings DuckDB's parser cannot read, rewritten to what it can:
 * `OPERATOR(pg_catalog.~)` becomes `~`, an unquoted `pg_catalog.` qualifier is
 * dropped (every pg_catalog name is visible unqualified, as in PostgreSQL),
 * `COLLATE "default"` and `COLLATE pg_catalog.default` are dropped, the jsonb
 * operators -> ->> #> #>> ? ?| ?& become the stand-ins above. Returns a
 * malloc'd text when something changed, else NULL (also when out of memory:
 * the text then runs as written). Lexical only: what the gate checks is the
 * result. */
char *pgw_normalize(const char *s, size_t n);

/* PostgreSQL's array input syntax, one dimension: `{a, "b c", NULL}`, with an
 * optional `[1:3]=` prefix. item() is called for each element, unescaped and
 * NUL-terminated (valid during the call; is_null for an unquoted NULL); it
 * returns false to stop (having set err, or not: PG_INVALID_TEXT then).
 * PG_INVALID_TEXT for malformed text, NOT_IMPLEMENTED for nested arrays. */
typedef bool (*pgw_array_item_fn)(void *ctx, const char *s, size_t n, bool is_null);
enum vt_err pgw_array_parse(const char *s, size_t n, pgw_array_item_fn item, void *ctx,
                            struct vt_error *err);

/* An error message with the catalog's own names ("vt:imatch",
 * "vt:is_columns") as the names the client wrote (imatch,
 * information_schema.columns); returns its length (out has cap bytes). */
size_t pgw_scrub_names(const char *msg, char *out, size_t cap);

/* ------------------------------------------------ the catalog (catalog.c) */

/* PostgreSQL's dialect for the SQL gate (dialect.c; sql.h: struct
 * sql_dialect): its names mapped onto the catalog pgw_catalog_sync keeps on
 * each worker connection. */
struct sql_dialect;
extern const struct sql_dialect pgw_dialect;

/* A PostgreSQL date/time template (to_char, to_timestamp: 'YYYY-MM-DD
 * HH24:MI:SS.US') as DuckDB's strftime/strptime format ('%Y-%m-%d
 * %H:%M:%S.%f'); false for patterns without an equivalent or when cap is too
 * small. */
bool pgw_datetime_format(const char *pg, size_t n, char *out, size_t cap);

/* What stands for a PostgreSQL name in this catalog ("vt:..." names, static
 * storage), or NULL when the catalog has nothing for it: a relation of
 * pg_catalog or information_schema; a function (the name of one DuckDB has
 * with PostgreSQL's meaning, or one of ours); a cast to a type DuckDB lacks
 * (`input`: the operand is a string constant or a parameter, which reads as
 * a name; otherwise a value shows as its name). */
const char *pgw_catalog_relation(const char *schema, const char *name);
const char *pgw_catalog_function(const char *name);
const char *pgw_catalog_cast(const char *type_name, bool input);
/* The relation standing for a set-returning catalog function called in FROM
 * (pg_get_keywords()), or NULL. */
const char *pgw_catalog_table_function(const char *name);

/* A dataset as the catalog shows it. */
struct pgw_cat_table {
    const char *name;
    const char *relation;           /* its pinned generation (column names and types) */
    const char *generation;         /* changes whenever the table may have changed */
    int64_t rows;                   /* pg_class.reltuples */
    int64_t bytes;                  /* its source files (pg_relation_size); -1 unknown */
    const bool *nullable;           /* per column, or NULL (attnotnull) */
    size_t ncols;
    const char *description;        /* obj_description, or NULL */
};

/* A setting as current_setting, SHOW-like views and pg_settings read it.
 * Names "vt.user", "vt.database", "vt.version", "vt.pid", "vt.started" feed
 * current_user, current_database(), version(), pg_backend_pid(),
 * pg_postmaster_start_time(). */
struct pgw_cat_setting {
    const char *name;
    const char *value;
    const char *description;
};

/* Makes the catalog on `con` (a worker's connection; the first call on a
 * connection creates its temporary tables and macros) show these tables and
 * settings; refills only what changed since the last call on `con`. */
enum vt_err pgw_catalog_sync(duckdb_connection con, const struct pgw_cat_table *tables,
                             size_t ntables, const struct pgw_cat_setting *settings,
                             size_t nsettings, const char *user, const char *database,
                             struct vt_error *err);

/* --------------------------------------------------- types (types.c) */

/* PostgreSQL type OIDs used here. */
enum {
    PGW_OID_BOOL = 16, PGW_OID_BYTEA = 17, PGW_OID_CHAR = 18, PGW_OID_NAME = 19,
    PGW_OID_INT8 = 20, PGW_OID_INT2 = 21, PGW_OID_INT4 = 23, PGW_OID_TEXT = 25,
    PGW_OID_OID = 26, PGW_OID_JSON = 114, PGW_OID_FLOAT4 = 700, PGW_OID_FLOAT8 = 701,
    PGW_OID_UNKNOWN = 705, PGW_OID_VARCHAR = 1043, PGW_OID_DATE = 1082, PGW_OID_TIME = 1083,
    PGW_OID_TIMESTAMP = 1114, PGW_OID_TIMESTAMPTZ = 1184, PGW_OID_INTERVAL = 1186,
    PGW_OID_TIMETZ = 1266, PGW_OID_BIT = 1560, PGW_OID_VARBIT = 1562, PGW_OID_NUMERIC = 1700,
    PGW_OID_UUID = 2950, PGW_OID_JSONB = 3802,
};

/* How a DuckDB type is shown to PostgreSQL clients (RowDescription). */
struct pgw_typeinfo {
    uint32_t oid;
    int16_t typlen;                 /* -1 variable */
    int32_t typmod;                 /* -1 none; numeric: ((p << 16) | s) + 4 */
};

/* The PostgreSQL type for a DuckDB type: scalars to their natural type
 * (unsigned and 128-bit integers to numeric, TINYINT to int2), LIST/ARRAY of
 * a scalar to its array type, STRUCT/MAP/UNION and nested lists to json,
 * ENUM to text. Never fails: anything else is text. */
struct pgw_typeinfo pgw_type_of(duckdb_logical_type t);
/* The array type of an element type (0 when there is none). */
uint32_t pgw_array_oid(uint32_t elem_oid);
/* The element type of an array type (0 when oid is not an array type). */
uint32_t pgw_array_elem(uint32_t oid);

/* Formatting settings of a session that change text output. */
struct pgw_format {
    int extra_float_digits;         /* > 0: shortest round-trip (PostgreSQL 12+) */
};

/* The encoder of a result: one per result, per chunk it appends one DataRow
 * per row (or one COPY line per row). */
struct pgw_rows;

/* For the result's columns (types borrowed for the call), formats[i] 0 text
 * or 1 binary (nformats 0: all text; 1: that one for all); as_text[i] (may
 * be NULL) sends column i as its text whatever the format (a column the
 * client was told is text). NULL with err set when out of memory or a type
 * cannot be sent. */
struct pgw_rows *pgw_rows_create(size_t ncol, const duckdb_logical_type *types,
                                 const int16_t *formats, size_t nformats,
                                 const struct pgw_format *fmt, const bool *as_text,
                                 struct vt_error *err);
void pgw_rows_destroy(struct pgw_rows *r);
size_t pgw_rows_ncol(const struct pgw_rows *r);
/* Appends rows [from, from + count) of the chunk as DataRow messages. -1 when
 * out refused the bytes (out of memory or its cap). */
int pgw_rows_data(struct pgw_rows *r, duckdb_data_chunk chunk, uint64_t from, uint64_t count,
                  struct strbuf *out);

/* One DataRow from a row of the index fast path (typed cells, index.h):
 * cells[cols[c]] for column c (cols NULL: cells[c]), the same bytes
 * pgw_rows_data writes for the same values. Columns whose cells the index
 * keeps as JSON text must be nested types (sent as json); lists and arrays
 * are not (pgw_rows_cells_supported says false). -1 out of memory. */
struct index_cell;
bool pgw_rows_cells_supported(const struct pgw_rows *r);
int pgw_rows_cells(struct pgw_rows *r, const struct index_cell *cells, const size_t *cols,
                   struct strbuf *out);

struct pgw_copy_options {
    enum pgw_copy_format format;
    char delimiter;
    const char *null_text;
};
/* The same rows as COPY ... TO STDOUT lines (text: tab-separated with
 * backslash escapes, \N for NULL; CSV: RFC 4180 quoting), each inside a
 * CopyData message. */
int pgw_rows_copy(struct pgw_rows *r, duckdb_data_chunk chunk, const struct pgw_copy_options *o,
                  struct strbuf *out);

/* The same rows in COPY's binary format, one CopyData message per tuple (a
 * field count, then each field's length or -1 and its binary value), as
 * PostgreSQL sends them (clients read a row per message); prefix (the file
 * header, or NULL) goes in front of the first. The encoder must have been
 * made with binary formats. */
int pgw_rows_copy_binary(struct pgw_rows *r, duckdb_data_chunk chunk, const char *prefix,
                         size_t plen, struct strbuf *out);
/* COPY's binary file header: signature, flags, extension length. */
#define PGW_COPY_BINARY_HEADER "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0"
#define PGW_COPY_BINARY_HEADER_LEN 19

/* RowDescription for a result: names[i] with types[i]. */
void pgw_write_row_description(struct strbuf *out, size_t ncol, const char *const *names,
                               const duckdb_logical_type *types, const int16_t *formats,
                               size_t nformats);

/* Single values in PostgreSQL's output forms (values.c; pure, exported for
 * the DataRow encoder, the unit tests and the settings/catalog code). */
/* The text of a date (days since 1970-01-01), a time (microseconds since
 * midnight), a TIMETZ (DuckDB's packed bits), a timestamp (microseconds since
 * 1970; tz: with "+00"), an interval and a uuid (DuckDB's 16 bytes, upper half
 * sign-flipped), written at out (room for 160 bytes); each returns the end.
 * Infinite dates and timestamps are "infinity"/"-infinity", years before 1
 * "... BC", as PostgreSQL writes them. */
char *pgw_txt_date(char *out, int32_t days);
char *pgw_txt_time(char *out, int64_t us);
char *pgw_txt_timetz(char *out, uint64_t bits);
char *pgw_txt_timestamp(char *out, int64_t us, bool tz);
char *pgw_txt_interval(char *out, int32_t months, int32_t days, int64_t micros);
char *pgw_txt_uuid(char *out, const void *p);
/* PostgreSQL's float8/float4 output rules. */
size_t pgw_fmt_double(char *out, double v, int extra_float_digits);  /* out >= 32 bytes */
size_t pgw_fmt_float(char *out, float v, int extra_float_digits);    /* out >= 32 bytes */
/* Binary numeric from a decimal text ("-12.340"): appends the value. */
int pgw_numeric_binary(struct strbuf *out, const char *text, size_t len);

/* A parameter value as the SQL path binds it (query.h's query_value), by the
 * type the client declared (0: unspecified, then text goes as VARCHAR for
 * DuckDB to cast to the type it inferred). Text or binary input; strings are
 * copied into the arena. PG_INVALID_TEXT for text that does not read as the
 * declared type or is not UTF-8, PG_PROTOCOL for a binary value of the wrong
 * size. */
struct query_value;
struct arena;
/* Arrays (an array type's OID, text '{a,"b c",NULL}' or binary) become
 * QUERY_VALUE_LIST values of their elements (NULL elements included; one
 * dimension; at most VT_PGWIRE_MAX_ARRAY_ITEMS), cast "<element type>[]". */
enum vt_err pgw_param_decode(const struct pgw_value *v, uint32_t oid, struct arena *a,
                             struct query_value *out, struct vt_error *err);
/* An untyped text parameter '{a,b}' where DuckDB expects a list (drivers
 * that send lists of strings without a type): VARCHAR items, which DuckDB
 * casts; an empty one is typed NULL[] so that DuckDB takes the type it needs. */
enum vt_err pgw_param_decode_untyped_array(const struct pgw_value *v, struct arena *a,
                                           struct query_value *out, struct vt_error *err);


#endif
