/*
 * The S3 client used by S3 parquet sources and Delta tables on S3: ListObjectsV2
 * (XML parsed with expat, continuation tokens), GET (whole object, byte range,
 * to memory or to a file) and HEAD, signed by libcurl's CURLOPT_AWS_SIGV4.
 *
 * Configuration (struct s3_config from a dataset block):
 *   region     s3.region, else $AWS_REGION, else $AWS_DEFAULT_REGION, else us-east-1
 *   endpoint   s3.endpoint (http:// refused unless s3.allow_http = true), else
 *              https://s3.<region>.amazonaws.com
 *   addressing virtual (default: https://<bucket>.<endpoint host>/<key>) or path
 *              (<endpoint>/<bucket>/<key>). Virtual falls back to path style for
 *              bucket names that are not DNS labels and for IP-literal/localhost
 *              endpoints, where a bucket sub-domain cannot resolve.
 *   credentials $AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY / $AWS_SESSION_TOKEN,
 *              or the variables *named* by s3.access_key_id_env /
 *              s3.secret_access_key_env / s3.session_token_env. With no key id
 *              and secret at all, requests go unsigned (public buckets).
 *
 * Behaviour: no redirects are followed (a 301/307 from S3 means a wrong region or
 * endpoint and becomes an error naming x-amz-bucket-region); connect and
 * transfer timeouts, never past the bound the owner set (s3_client_bound: a
 * build's deadline and cancel flag); up to VT_S3_MAX_ATTEMPTS tries with
 * exponential backoff and full jitter on transport errors, 5xx, 429 and
 * SlowDown. 403 sets outcome.access_denied. Every socket is checked after DNS
 * (util/netaddr.h): link-local, cloud metadata and reserved addresses are never
 * dialled, loopback and private ones only for an endpoint the config names
 * (s3.endpoint set). Error messages carry the status and the S3 error code,
 * never the remote's message text. Secrets never reach a log line or an error
 * message.
 *
 * A client is used by one thread at a time; s3_download_many() runs its own
 * per-thread handles.
 */
#ifndef VT_SOURCES_S3_H
#define VT_SOURCES_S3_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/errors.h"

struct s3_client;

/* What went wrong beyond the vt_err code, for callers that branch on it. */
struct s3_outcome {
    int http_status;            /* last HTTP status (0 = transport failure) */
    bool access_denied;         /* 401/403 (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, ...) */
    bool not_found;             /* 404 NoSuchKey / NoSuchBucket */
    bool changed;               /* 412: object changed since it was listed (If-Match), or a
                                 * conditional PUT lost (If-Match / If-None-Match: *) */
    bool not_modified;          /* 304 to If-None-Match: nothing was read */
};

struct s3_object {
    char *key;                  /* full key (decoded) */
    int64_t size;
    char *etag;                 /* as sent, quotes included; may be NULL */
};

struct s3_listing {
    struct s3_object *items;
    size_t n, cap;
};

/* One parsed ListObjectsV2 page (s3_xml.c). */
struct s3_list_page {
    struct s3_listing objects;
    bool is_truncated;
    char *next_token;           /* NextContinuationToken or NULL */
    char *last_key;             /* last Key seen (for StartAfter-style paging) */
};

/* An S3 error document: <Error><Code>..</Code><Message>..</Message>... */
struct s3_error_doc {
    char code[64];
    char message[256];
    char region[64];            /* <Region> of a redirect, when present */
};

/* s3://bucket/key-or-pattern split in two (key may be empty). */
struct s3_url {
    char *bucket;
    char *key;
};

enum vt_err s3_url_parse(const char *url, struct s3_url *out, struct vt_error *err);
void s3_url_release(struct s3_url *u);

/* Creates a client from a dataset's s3 block (NULL = all defaults + env). */
enum vt_err s3_client_create(const struct s3_config *cfg, struct s3_client **out,
                             struct vt_error *err);
void s3_client_destroy(struct s3_client *c);
/* Bounds every later request of the client: none runs past deadline_ms
 * (monotonic; 0 = none) or after *cancel becomes true (may be NULL); a
 * transfer in progress is aborted, retries stop, backoffs are cut short. */
void s3_client_bound(struct s3_client *c, int64_t deadline_ms, const atomic_bool *cancel);
/* For messages and tests: the effective region / endpoint base. */
const char *s3_client_region(const struct s3_client *c);
const char *s3_client_endpoint(const struct s3_client *c);

/* Lists every key under `prefix` (ListObjectsV2, all pages), keys greater than
 * `start_after` (may be NULL), direct children only when `delimiter` is "/"
 * (CommonPrefixes are dropped). Keys ending in '/' (folder markers) are skipped.
 * Fails with VT_ERR_LIMIT_EXCEEDED past VT_S3_MAX_LIST_KEYS. `page_size` 0 =
 * server default (1000); tests pass small values to exercise paging. */
enum vt_err s3_list(struct s3_client *c, const char *bucket, const char *prefix,
                    const char *start_after, const char *delimiter, int page_size,
                    struct s3_listing *out, struct s3_outcome *outcome, struct vt_error *err);
void s3_listing_release(struct s3_listing *l);

/* GET into memory, at most max_bytes (larger objects fail). Caller frees *out_buf
 * (NUL-terminated for convenience; the NUL is not counted). range_len < 0 means
 * the whole object from range_off (0 = whole object). */
enum vt_err s3_get_mem(struct s3_client *c, const char *bucket, const char *key,
                       int64_t range_off, int64_t range_len, size_t max_bytes, char **out_buf,
                       size_t *out_len, struct s3_outcome *outcome, struct vt_error *err);

/* A connection of its own for one thread's requests through a client (the
 * client's own handle belongs to its owning thread): keep-alive per thread. */
struct s3_conn;
struct s3_conn *s3_conn_create(void);
void s3_conn_destroy(struct s3_conn *conn);
/* GET bytes [off, off + len) into memory (exactly len bytes, or an error),
 * with If-Match: if_match when not NULL (a changed object: outcome.changed),
 * on `conn` (NULL: the client's own handle). */
enum vt_err s3_get_range(struct s3_client *c, struct s3_conn *conn, const char *bucket,
                         const char *key, int64_t off, int64_t len, const char *if_match,
                         char **out_buf, size_t *out_len, struct s3_outcome *outcome,
                         struct vt_error *err);

/* GET the whole object into `path` (written to path.part, then renamed).
 * `if_match` (may be NULL) is sent as If-Match so an object rewritten since the
 * listing fails with outcome.changed instead of mixing versions. */
enum vt_err s3_get_file(struct s3_client *c, const char *bucket, const char *key,
                        const char *if_match, const char *path, int64_t *out_size,
                        struct s3_outcome *outcome, struct vt_error *err);

/* GET of a small object into memory (at most max_bytes) unless its ETag is
 * still `if_none_match` (may be NULL): then outcome.not_modified is set and
 * *out_buf stays NULL. *out_etag (malloc'd, may be NULL) is the object's ETag. */
enum vt_err s3_get_if_changed(struct s3_client *c, const char *bucket, const char *key,
                              const char *if_none_match, size_t max_bytes, char **out_buf,
                              size_t *out_len, char **out_etag, struct s3_outcome *outcome,
                              struct vt_error *err);

/* PUT of bytes in memory or of a local file (path; data NULL), signed with
 * the body's SHA-256. Conditional writes: if_none_match "*" creates only
 * when the key is absent, if_match "<etag>" replaces only that version; a
 * lost condition (HTTP 412, or 409 from a store that saw a concurrent
 * conditional write) sets outcome.changed. *out_etag (malloc'd, may be NULL)
 * is the new object's ETag. Retries transport errors and 5xx like reads. */
enum vt_err s3_put(struct s3_client *c, const char *bucket, const char *key, const void *data,
                   size_t len, const char *path, const char *content_type,
                   const char *if_match, const char *if_none_match, char **out_etag,
                   struct s3_outcome *outcome, struct vt_error *err);

/* DELETE of one key (a missing key is success, as S3 answers 204). */
enum vt_err s3_delete(struct s3_client *c, const char *bucket, const char *key,
                      struct s3_outcome *outcome, struct vt_error *err);

/* HEAD: size and ETag of one object. */
enum vt_err s3_head(struct s3_client *c, const char *bucket, const char *key,
                    struct s3_object *out, struct s3_outcome *outcome, struct vt_error *err);
void s3_object_release(struct s3_object *o);

/* Downloads n objects in parallel (VT_S3_DOWNLOAD_THREADS), each to paths[i].
 * if_match[i] may be NULL (or the whole array NULL). The first failure stops the
 * rest; files already written are left to the caller (it knows their names). */
struct s3_download {
    const char *bucket;
    const char *key;
    const char *if_match;
    const char *path;
};
enum vt_err s3_download_many(struct s3_client *c, const struct s3_download *jobs, size_t n,
                             struct s3_outcome *outcome, struct vt_error *err);

/* XML (s3_xml.c). Both bounded and safe on any input (fuzzed). */
enum vt_err s3_list_parse(const char *xml, size_t len, struct s3_list_page *out,
                          struct vt_error *err);
void s3_list_page_release(struct s3_list_page *p);
/* Best effort: fills what it finds, returns false when it is not an error doc. */
bool s3_error_parse(const char *xml, size_t len, struct s3_error_doc *out);

/* Key matching for s3:// globs: `*` and `?` within one path segment, `**` any
 * number of segments, [abc] / [a-z] / [!a] classes. */
bool s3_glob_match(const char *pattern, const char *key);
/* Index of the first glob metacharacter in s, or strlen(s) when none. */
size_t s3_glob_literal_prefix_len(const char *s);

/* Percent-encodes one key for a URL path (keeps '/'), per SigV4's rules. */
char *s3_uri_encode(const char *s, bool keep_slash);

#endif
