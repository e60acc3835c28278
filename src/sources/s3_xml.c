/*
 * S3 XML answers, parsed with expat: ListObjectsV2 pages (ListBucketResult) and
 * error documents (<Error><Code>...). The input comes from the network, so the
 * parser refuses DTDs/entities, caps element depth, text lengths and the number
 * of entries, and never trusts the document's structure (fuzzed by
 * tests/fuzz/fuzz_s3_list_xml.c).
 */
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/s3.h"
#include "util/text.h"
#include "util/limits.h"

/* Text of one element: keys are at most 1024 bytes decoded, 3x that encoded;
 * tokens and ETags are shorter. Anything longer is malformed for us. */
#define XML_TEXT_MAX (4 * VT_S3_MAX_KEY_BYTES)
/* A page holds at most 1000 keys in practice; leave room for odd servers. */
#define XML_MAX_PAGE_OBJECTS 100000

struct list_parser {
    XML_Parser p;
    struct s3_list_page *page;
    int depth;
    /* Which elements are open, by depth (only the first few levels matter). */
    char path[VT_S3_MAX_XML_DEPTH][32];
    char text[XML_TEXT_MAX + 1];
    size_t text_len;
    bool text_overflow;
    bool in_contents;
    bool url_encoded;
    char *cur_key;
    int64_t cur_size;
    char *cur_etag;
    bool failed;
    const char *why;
};

static void stop(struct list_parser *lp, const char *why)
{
    if (!lp->failed) {
        lp->failed = true;
        lp->why = why;
    }
    XML_StopParser(lp->p, XML_FALSE);
}

/* Element names may carry a namespace prefix ("s3:Key"); compare the local part. */
static const char *local_name(const char *name)
{
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    (void)atts;
    struct list_parser *lp = ud;
    if (lp->depth >= VT_S3_MAX_XML_DEPTH) {
        stop(lp, "XML nested too deeply");
        return;
    }
    const char *ln = local_name(name);
    size_t n = strlen(ln);
    if (n >= sizeof lp->path[0])
        n = sizeof lp->path[0] - 1;
    memcpy(lp->path[lp->depth], ln, n);
    lp->path[lp->depth][n] = '\0';
    lp->depth++;
    lp->text_len = 0;
    lp->text_overflow = false;
    if (lp->depth == 2 && strcmp(ln, "Contents") == 0) {
        lp->in_contents = true;
        free(lp->cur_key);
        free(lp->cur_etag);
        lp->cur_key = lp->cur_etag = NULL;
        lp->cur_size = -1;
    }
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    struct list_parser *lp = ud;
    if (len <= 0)
        return;
    if (lp->text_len + (size_t)len > XML_TEXT_MAX) {
        lp->text_overflow = true;
        return;
    }
    memcpy(lp->text + lp->text_len, s, (size_t)len);
    lp->text_len += (size_t)len;
}

/* encoding-type=url: S3 form-encodes keys (space as '+'). Decodes in place. */
static bool url_decode_inplace(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '%') {
            int h = text_hexval((unsigned char)r[1]), l = h >= 0 ? text_hexval((unsigned char)r[2]) : -1;
            if (h < 0 || l < 0)
                return false;
            *w++ = (char)(h * 16 + l);
            r += 2;
        } else if (*r == '+') {
            *w++ = ' ';
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

static int push_object(struct s3_listing *l, char *key, int64_t size, char *etag)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct s3_object *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return -1;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n].key = key;
    l->items[l->n].size = size;
    l->items[l->n].etag = etag;
    l->n++;
    return 0;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    struct list_parser *lp = ud;
    (void)name;
    if (lp->depth <= 0)
        return;
    lp->depth--;
    const char *el = lp->path[lp->depth];
    lp->text[lp->text_len] = '\0';
    if (lp->text_overflow && (lp->in_contents || lp->depth == 1)) {
        stop(lp, "XML text value too long");
        return;
    }
    if (lp->depth == 0) {
        if (strcmp(el, "ListBucketResult") != 0)
            stop(lp, "not a ListBucketResult document");
        return;
    }
    if (lp->depth == 1) {
        if (strcmp(el, "IsTruncated") == 0) {
            lp->page->is_truncated = strcmp(lp->text, "true") == 0;
        } else if (strcmp(el, "NextContinuationToken") == 0) {
            free(lp->page->next_token);
            lp->page->next_token = strdup(lp->text);
            if (!lp->page->next_token)
                stop(lp, "out of memory");
        } else if (strcmp(el, "EncodingType") == 0) {
            lp->url_encoded = strcmp(lp->text, "url") == 0;
        } else if (strcmp(el, "Contents") == 0 && lp->in_contents) {
            lp->in_contents = false;
            if (!lp->cur_key || lp->cur_size < 0) {
                stop(lp, "Contents entry without Key or Size");
                return;
            }
            if (lp->page->objects.n >= XML_MAX_PAGE_OBJECTS) {
                stop(lp, "too many entries in one listing page");
                return;
            }
            if (push_object(&lp->page->objects, lp->cur_key, lp->cur_size, lp->cur_etag) < 0) {
                stop(lp, "out of memory");
                return;
            }
            lp->cur_key = lp->cur_etag = NULL;
        }
        return;
    }
    if (lp->depth == 2 && lp->in_contents) {
        if (strcmp(el, "Key") == 0) {
            free(lp->cur_key);
            lp->cur_key = strdup(lp->text);
            if (!lp->cur_key)
                stop(lp, "out of memory");
        } else if (strcmp(el, "Size") == 0) {
            if (!parse_i64(lp->text, &lp->cur_size))
                stop(lp, "bad Size in listing");
        } else if (strcmp(el, "ETag") == 0) {
            free(lp->cur_etag);
            lp->cur_etag = strdup(lp->text);
            if (!lp->cur_etag)
                stop(lp, "out of memory");
        }
    }
}

/* A DTD could declare entities (billion laughs, external entities): refuse. */
static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    stop(ud, "DTD not allowed");
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int pe, const XML_Char *value,
                              int value_len, const XML_Char *base, const XML_Char *sysid,
                              const XML_Char *pubid, const XML_Char *notation)
{
    (void)name, (void)pe, (void)value, (void)value_len, (void)base, (void)sysid, (void)pubid,
        (void)notation;
    stop(ud, "entity declarations not allowed");
}

void s3_listing_release(struct s3_listing *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].etag);
    }
    free(l->items);
    l->items = NULL;
    l->n = l->cap = 0;
}

void s3_list_page_release(struct s3_list_page *p)
{
    if (!p)
        return;
    s3_listing_release(&p->objects);
    free(p->next_token);
    free(p->last_key);
    memset(p, 0, sizeof *p);
}

enum vt_err s3_list_parse(const char *xml, size_t len, struct s3_list_page *out,
                          struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (len > VT_S3_MAX_LIST_PAGE_BYTES || len > (size_t)INT32_MAX)
        return vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "S3 listing page too large");
    struct list_parser *lp = calloc(1, sizeof *lp);
    if (!lp)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    lp->p = XML_ParserCreate("UTF-8");
    if (!lp->p) {
        free(lp);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    lp->page = out;
    lp->cur_size = -1;
    XML_SetUserData(lp->p, lp);
    XML_SetElementHandler(lp->p, on_start, on_end);
    XML_SetCharacterDataHandler(lp->p, on_text);
    XML_SetStartDoctypeDeclHandler(lp->p, on_doctype);
    XML_SetEntityDeclHandler(lp->p, on_entity);
    enum XML_Status st = XML_Parse(lp->p, xml, (int)len, XML_TRUE);
    enum vt_err rc = VT_ERR_OK;
    if (lp->failed || st != XML_STATUS_OK) {
        const char *why = lp->failed ? lp->why : XML_ErrorString(XML_GetErrorCode(lp->p));
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "malformed S3 listing: %s",
                          why ? why : "parse error");
    } else if (lp->depth != 0) {
        rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE, "malformed S3 listing: truncated");
    }
    if (rc == VT_ERR_OK && lp->url_encoded) {
        for (size_t i = 0; i < out->objects.n; i++) {
            if (!url_decode_inplace(out->objects.items[i].key)) {
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "malformed S3 listing: bad URL encoding in a key");
                break;
            }
        }
    }
    if (rc == VT_ERR_OK) {
        for (size_t i = 0; i < out->objects.n; i++) {
            size_t kl = strlen(out->objects.items[i].key);
            if (kl == 0 || kl > VT_S3_MAX_KEY_BYTES) {
                rc = vt_error_set(err, VT_ERR_SOURCE_UNAVAILABLE,
                                  "malformed S3 listing: key length %zu out of range", kl);
                break;
            }
        }
    }
    if (rc == VT_ERR_OK && out->objects.n > 0) {
        out->last_key = strdup(out->objects.items[out->objects.n - 1].key);
        if (!out->last_key)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(lp->cur_key);
    free(lp->cur_etag);
    XML_ParserFree(lp->p);
    free(lp);
    if (rc != VT_ERR_OK)
        s3_list_page_release(out);
    return rc;
}

/* ---- error documents ---------------------------------------------------- */

struct err_parser {
    XML_Parser p;
    struct s3_error_doc *doc;
    int depth;
    char cur[32];
    char text[512];
    size_t text_len;
    bool is_error;
};

static void XMLCALL err_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    (void)atts;
    struct err_parser *ep = ud;
    if (++ep->depth > VT_S3_MAX_XML_DEPTH) {
        XML_StopParser(ep->p, XML_FALSE);
        return;
    }
    const char *ln = local_name(name);
    if (ep->depth == 1)
        ep->is_error = strcmp(ln, "Error") == 0;
    snprintf(ep->cur, sizeof ep->cur, "%s", ln);
    ep->text_len = 0;
}

static void XMLCALL err_text(void *ud, const XML_Char *s, int len)
{
    struct err_parser *ep = ud;
    if (len <= 0)
        return;
    size_t room = sizeof ep->text - 1 - ep->text_len;
    size_t n = (size_t)len < room ? (size_t)len : room;
    memcpy(ep->text + ep->text_len, s, n);
    ep->text_len += n;
}

static void copy_clean(char *dst, size_t cap, const char *src)
{
    /* Error text ends up in logs and API messages: keep it printable. */
    size_t j = 0;
    for (size_t i = 0; src[i] && j + 1 < cap; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[j++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    dst[j] = '\0';
}

static void XMLCALL err_end(void *ud, const XML_Char *name)
{
    struct err_parser *ep = ud;
    (void)name;
    ep->text[ep->text_len] = '\0';
    if (ep->depth == 2 && ep->is_error) {
        if (strcmp(ep->cur, "Code") == 0)
            copy_clean(ep->doc->code, sizeof ep->doc->code, ep->text);
        else if (strcmp(ep->cur, "Message") == 0)
            copy_clean(ep->doc->message, sizeof ep->doc->message, ep->text);
        else if (strcmp(ep->cur, "Region") == 0)
            copy_clean(ep->doc->region, sizeof ep->doc->region, ep->text);
    }
    ep->depth--;
    ep->text_len = 0;
    ep->cur[0] = '\0';
}

static void XMLCALL err_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    struct err_parser *ep = ud;
    ep->is_error = false;
    XML_StopParser(ep->p, XML_FALSE);
}

bool s3_error_parse(const char *xml, size_t len, struct s3_error_doc *out)
{
    memset(out, 0, sizeof *out);
    if (!xml || len == 0 || len > VT_S3_MAX_ERROR_BODY_BYTES)
        return false;
    struct err_parser ep = {0};
    ep.p = XML_ParserCreate("UTF-8");
    if (!ep.p)
        return false;
    ep.doc = out;
    XML_SetUserData(ep.p, &ep);
    XML_SetElementHandler(ep.p, err_start, err_end);
    XML_SetCharacterDataHandler(ep.p, err_text);
    XML_SetStartDoctypeDeclHandler(ep.p, err_doctype);
    enum XML_Status st = XML_Parse(ep.p, xml, (int)len, XML_TRUE);
    XML_ParserFree(ep.p);
    if (st != XML_STATUS_OK && !out->code[0])
        return false;
    return out->code[0] != '\0';
}
