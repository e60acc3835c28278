/* JWT parsing and claims (src/auth/jwt.c, claims.c): base64url, the compact
 * form, the RFC 8725 header attacks, the claim checks, scopes, tenants and
 * RFC 6901 pointers. No cryptography here (test_jwk.c has it). */
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "testlib.h"
#include "util/limits.h"

static void b64url(const char *in, size_t n, char *out)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 |
                     (unsigned char)in[i + 2];
        out[o++] = al[v >> 18];
        out[o++] = al[(v >> 12) & 63];
        out[o++] = al[(v >> 6) & 63];
        out[o++] = al[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned char)in[i] << 16;
        out[o++] = al[v >> 18];
        out[o++] = al[(v >> 12) & 63];
    } else if (n - i == 2) {
        unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8;
        out[o++] = al[v >> 18];
        out[o++] = al[(v >> 12) & 63];
        out[o++] = al[(v >> 6) & 63];
    }
    out[o] = '\0';
}

/* header.claims.sig from two JSON texts and a signature text. */
static char *token(const char *header, const char *claims, const char *sig)
{
    size_t cap = 4 * (strlen(header) + strlen(claims) + strlen(sig)) / 3 + 16;
    char *t = malloc(cap), *p = t;
    b64url(header, strlen(header), p);
    p += strlen(p);
    *p++ = '.';
    b64url(claims, strlen(claims), p);
    p += strlen(p);
    *p++ = '.';
    b64url(sig, strlen(sig), p);
    return t;
}

static enum vt_err parse(const char *t, struct auth_jwt *j)
{
    const char *why = NULL;
    enum vt_err rc = auth_jwt_parse(t, strlen(t), j, &why);
    if (rc == VT_ERR_OK)
        CHECK(why == NULL);
    else
        CHECK(why != NULL && *why);
    return rc;
}

TEST(b64url_strict)
{
    unsigned char out[16];
    size_t n = 0;
    CHECK_EQ_INT(auth_b64url_decode("aGk", 3, out, sizeof out, &n), 0);
    CHECK_EQ_INT(n, 2);
    CHECK(memcmp(out, "hi", 2) == 0);
    CHECK_EQ_INT(auth_b64url_decode("", 0, out, sizeof out, &n), 0);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(auth_b64url_decode("-_8", 3, out, sizeof out, &n), 0);
    CHECK_EQ_INT(auth_b64url_decode("aGk=", 4, out, sizeof out, &n), -1); /* padding */
    CHECK_EQ_INT(auth_b64url_decode("aG+", 3, out, sizeof out, &n), -1);  /* base64, not url */
    CHECK_EQ_INT(auth_b64url_decode("a", 1, out, sizeof out, &n), -1);    /* impossible length */
    CHECK_EQ_INT(auth_b64url_decode("aGl", 3, out, sizeof out, &n), -1);  /* stray low bits */
    CHECK_EQ_INT(auth_b64url_decode("aGk", 3, out, 1, &n), -1);           /* no room */
}

TEST(parse_ok)
{
    char *t = token("{\"alg\":\"RS256\",\"kid\":\"k1\",\"typ\":\"JWT\"}",
                    "{\"iss\":\"https://i\",\"exp\":1}", "sig");
    struct auth_jwt j;
    CHECK_EQ_INT(parse(t, &j), VT_ERR_OK);
    CHECK_EQ_INT(j.alg, AUTH_ALG_RS256);
    CHECK_EQ_STR(j.kid, "k1");
    CHECK_EQ_INT(j.sig_len, 3);
    CHECK(memcmp(j.sig, "sig", 3) == 0);
    CHECK_EQ_INT(j.signing_len, (size_t)(strrchr(t, '.') - t));
    CHECK_EQ_STR(json_string_value(json_object_get(j.claims, "iss")), "https://i");
    auth_jwt_release(&j);
    free(t);
}

TEST(every_algorithm_name)
{
    const char *names[] = {"RS256", "RS384", "RS512", "ES256", "ES384",
                           "ES512", "PS256", "PS384", "PS512"};
    for (size_t i = 0; i < 9; i++) {
        CHECK_EQ_INT(auth_alg_from_name(names[i]), AUTH_ALG_RS256 + (int)i);
        CHECK_EQ_STR(auth_alg_name(auth_alg_from_name(names[i])), names[i]);
    }
    const char *bad[] = {"none", "None", "NONE", "HS256", "HS384", "HS512", "rs256", "EdDSA",
                         "RS256 ", "", "ES256K"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(auth_alg_from_name(bad[i]), AUTH_ALG_INVALID);
}

TEST(rfc8725_header_attacks)
{
    const char *claims = "{\"iss\":\"x\",\"exp\":1}";
    const char *headers[] = {
        "{\"alg\":\"none\"}", "{\"alg\":\"None\"}", "{\"alg\":\"NONE\"}", "{\"alg\":\"nOnE\"}",
        "{\"alg\":\"HS256\"}", "{\"alg\":\"HS512\"}", "{}", "{\"alg\":null}", "{\"alg\":256}",
        "{\"alg\":\"RS256\",\"crit\":[\"exp\"]}", "{\"alg\":\"RS256\",\"kid\":7}",
        "{\"alg\":\"RS256\",\"alg\":\"none\"}", /* duplicate key */
        "[\"alg\",\"RS256\"]", "\"RS256\"", "{\"alg\":\"RS256\"", "",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char *t = token(headers[i], claims, "sig");
        struct auth_jwt j;
        CHECK_EQ_INT(parse(t, &j), VT_ERR_INVALID_TOKEN);
        CHECK(j.header == NULL && j.claims == NULL && j.sig == NULL);
        free(t);
    }
}

TEST(shape_attacks)
{
    const char *bad[] = {
        "", ".", "..", "a.b", "a.b.c.d", "eyJhbGciOiJSUzI1NiJ9.e30.", /* stripped signature */
        "eyJhbGciOiJSUzI1NiJ9..c2ln",                                /* empty claims */
        ".e30.c2ln", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln=",               /* padding */
        "eyJhbGciOiJSUzI1NiJ9.e30.c2l+", "eyJhbGciOiJSUzI1NiJ9.W10.c2ln", /* claims [] */
        "eyJhbGciOiJSUzI1NiJ9 .e30.c2ln", "garbage", "Bearer abc.def.ghi",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct auth_jwt j;
        CHECK_EQ_INT(parse(bad[i], &j), VT_ERR_INVALID_TOKEN);
    }
    /* The valid minimal token of the list above parses. */
    struct auth_jwt j;
    CHECK_EQ_INT(parse("eyJhbGciOiJSUzI1NiJ9.e30.c2ln", &j), VT_ERR_OK);
    auth_jwt_release(&j);
}

TEST(size_and_depth_bounds)
{
    /* Claims nested past VT_JWT_MAX_JSON_DEPTH. */
    char deep[256] = "{\"a\":";
    for (int i = 0; i < VT_JWT_MAX_JSON_DEPTH; i++)
        strcat(deep, "[");
    for (int i = 0; i < VT_JWT_MAX_JSON_DEPTH; i++)
        strcat(deep, "]");
    strcat(deep, "}");
    char *t = token("{\"alg\":\"RS256\"}", deep, "sig");
    struct auth_jwt j;
    CHECK_EQ_INT(parse(t, &j), VT_ERR_INVALID_TOKEN);
    free(t);
    /* Brackets inside strings do not count. */
    t = token("{\"alg\":\"RS256\"}", "{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}", "sig");
    CHECK_EQ_INT(parse(t, &j), VT_ERR_OK);
    auth_jwt_release(&j);
    free(t);
    /* A token past VT_JWT_MAX_TOKEN_BYTES. */
    size_t n = VT_JWT_MAX_TOKEN_BYTES;
    char *big = malloc(n + 40);
    memset(big, 'a', n + 39);
    big[n + 39] = '\0';
    memcpy(big, "eyJhbGciOiJSUzI1NiJ9.", 21);
    big[n - 5] = '.';
    CHECK_EQ_INT(parse(big, &j), VT_ERR_INVALID_TOKEN);
    free(big);
    /* A header past VT_JWT_MAX_HEADER_BYTES. */
    char *hdr = malloc(VT_JWT_MAX_HEADER_BYTES + 64);
    strcpy(hdr, "{\"alg\":\"RS256\",\"x\":\"");
    size_t l = strlen(hdr);
    memset(hdr + l, 'x', VT_JWT_MAX_HEADER_BYTES);
    strcpy(hdr + l + VT_JWT_MAX_HEADER_BYTES, "\"}");
    t = token(hdr, "{}", "sig");
    CHECK_EQ_INT(parse(t, &j), VT_ERR_INVALID_TOKEN);
    free(t);
    free(hdr);
}

/* ---------------------------------------------------------------- claims */

static struct strvec sv(const char *a, const char *b)
{
    struct strvec v = {0};
    if (a)
        strvec_push(&v, a);
    if (b)
        strvec_push(&v, b);
    return v;
}

static struct strvec read_s, reload_s, tenants;
static struct auth_rules rules(void)
{
    struct auth_rules r = {.issuer = "https://idp", .audience = "vitrine", .leeway = 60,
                           .read_scopes = &read_s, .reload_scopes = &reload_s,
                           .allowed_tenants = &tenants};
    return r;
}

static enum vt_err check(const struct auth_rules *r, const char *claims, int64_t now,
                         struct auth_grant *g)
{
    json_error_t e;
    json_t *c = json_loads(claims, 0, &e);
    CHECK(c != NULL);
    const char *why = NULL;
    enum vt_err rc = auth_claims_check(r, c, now, g, &why);
    CHECK(rc == VT_ERR_OK ? why == NULL : why != NULL);
    json_decref(c);
    return rc;
}

#define NOW 1700000000

TEST(claims_iss_aud_exp)
{
    struct auth_rules r = rules();
    struct auth_grant g;
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":1700000100}", NOW, &g),
                 VT_ERR_OK);
    CHECK_EQ_INT(g.valid_until, 1700000160);
    CHECK_EQ_INT(g.grants, 0);
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"aud\":[\"x\",\"vitrine\"],\"exp\":1700000100}",
                       NOW, &g),
                 VT_ERR_OK);
    const char *bad[] = {
        "{\"aud\":\"vitrine\",\"exp\":1700000100}",                                  /* no iss */
        "{\"iss\":\"https://idp/\",\"aud\":\"vitrine\",\"exp\":1700000100}",         /* wrong iss */
        "{\"iss\":\"https://evil\",\"aud\":\"vitrine\",\"exp\":1700000100}",
        "{\"iss\":\"https://idp\",\"exp\":1700000100}",                              /* no aud */
        "{\"iss\":\"https://idp\",\"aud\":\"other\",\"exp\":1700000100}",            /* wrong aud */
        "{\"iss\":\"https://idp\",\"aud\":[\"other\"],\"exp\":1700000100}",
        "{\"iss\":\"https://idp\",\"aud\":[],\"exp\":1700000100}",
        "{\"iss\":\"https://idp\",\"aud\":\"vitrine\"}",                             /* no exp */
        "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":\"1700000100\"}",      /* exp text */
        "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":1699999939}",          /* expired */
        "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":1700000100,\"nbf\":1700000061}",
        "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":1700000100,\"iat\":1700000061}",
        "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":1700000100,\"nbf\":null}",
        "{\"iss\":7,\"aud\":\"vitrine\",\"exp\":1700000100}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(check(&r, bad[i], NOW, &g), VT_ERR_INVALID_TOKEN);
    /* Within leeway: expired 60 s ago, nbf/iat 60 s ahead. */
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":1699999940,"
                           "\"nbf\":1700000060,\"iat\":1700000060}",
                       NOW, &g),
                 VT_ERR_OK);
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"aud\":\"vitrine\",\"exp\":1700000100.75}",
                       NOW, &g),
                 VT_ERR_OK);
    /* Without a configured audience, aud is not checked. */
    r.audience = NULL;
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"exp\":1700000100}", NOW, &g), VT_ERR_OK);
    /* Huge exp does not overflow. */
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"exp\":9223372036854775807}", NOW, &g),
                 VT_ERR_OK);
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"exp\":1e300}", NOW, &g), VT_ERR_INVALID_TOKEN);
}

TEST(claims_scopes)
{
    struct auth_rules r = rules();
    r.audience = NULL;
    struct auth_grant g;
    const char *base = "{\"iss\":\"https://idp\",\"exp\":1700000100,";
    char buf[512];
    struct {
        const char *extra;
        unsigned want;
    } cases[] = {
        {"\"scope\":\"openid datasets:read\"}", AUTH_GRANT_READ},
        {"\"scope\":\"datasets:reload\"}", AUTH_GRANT_RELOAD},
        {"\"scope\":\"  datasets:manage   other \"}", AUTH_GRANT_MANAGE},
        {"\"scope\":\"datasets:readx datasets:rea\"}", 0},
        {"\"scp\":[\"datasets:read\",\"datasets:manage\"]}", AUTH_GRANT_READ | AUTH_GRANT_MANAGE},
        {"\"scp\":\"datasets:reload datasets:read\"}", AUTH_GRANT_READ | AUTH_GRANT_RELOAD},
        {"\"scp\":[1,null,\"datasets:read\"]}", AUTH_GRANT_READ},
        {"\"scope\":\"x\",\"scp\":[\"reader\"]}", AUTH_GRANT_READ}, /* second read scope */
        {"\"scope\":[\"datasets:read\"]}", 0},                       /* scope must be a string */
        {"\"x\":1}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(buf, sizeof buf, "%s%s", base, cases[i].extra);
        CHECK_EQ_INT(check(&r, buf, NOW, &g), VT_ERR_OK);
        if (g.grants != cases[i].want)
            fprintf(stderr, "  case %zu: %s\n", i, cases[i].extra);
        CHECK_EQ_INT(g.grants, cases[i].want);
        CHECK(!g.tenant_denied);
    }
}

TEST(claims_tenants)
{
    struct auth_rules r = rules();
    r.audience = NULL;
    r.tenant_claim = "/org/id";
    struct auth_grant g;
    /* Empty allowed_tenants: any tenant, even none. */
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\"}",
                       NOW, &g),
                 VT_ERR_OK);
    CHECK(!g.tenant_denied && g.grants == AUTH_GRANT_READ);
    struct strvec allowed = sv("acme", "42");
    r.allowed_tenants = &allowed;
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\","
                           "\"org\":{\"id\":\"acme\"}}",
                       NOW, &g),
                 VT_ERR_OK);
    CHECK(!g.tenant_denied && g.grants == AUTH_GRANT_READ);
    CHECK_EQ_INT(check(&r, "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\","
                           "\"org\":{\"id\":42}}",
                       NOW, &g),
                 VT_ERR_OK);
    CHECK(!g.tenant_denied);
    const char *denied[] = {
        "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\",\"org\":{\"id\":\"evil\"}}",
        "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\"}",
        "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\",\"org\":{\"id\":[\"acme\"]}}",
        "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\",\"org\":\"acme\"}",
        "{\"iss\":\"https://idp\",\"exp\":1700000100,\"scope\":\"datasets:read\",\"org\":{\"id\":\"ACME\"}}",
    };
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        CHECK_EQ_INT(check(&r, denied[i], NOW, &g), VT_ERR_OK);
        CHECK(g.tenant_denied && g.grants == 0);
    }
    strvec_free(&allowed);
}

TEST(json_pointer_rfc6901)
{
    /* The example document of RFC 6901 §5. */
    json_error_t e;
    json_t *d = json_loads("{\"foo\":[\"bar\",\"baz\"],\"\":0,\"a/b\":1,\"c%d\":2,\"e^f\":3,"
                           "\"g|h\":4,\"i\\\\j\":5,\"k\\\"l\":6,\" \":7,\"m~n\":8}",
                           0, &e);
    CHECK(d != NULL);
    CHECK(auth_json_pointer(d, "") == d);
    CHECK(auth_json_pointer(d, "/foo") == json_object_get(d, "foo"));
    CHECK_EQ_STR(json_string_value(auth_json_pointer(d, "/foo/0")), "bar");
    CHECK_EQ_STR(json_string_value(auth_json_pointer(d, "/foo/1")), "baz");
    struct {
        const char *p;
        int v;
    } ints[] = {{"/", 0}, {"/a~1b", 1}, {"/c%d", 2}, {"/e^f", 3}, {"/g|h", 4},
                {"/i\\j", 5}, {"/k\"l", 6}, {"/ ", 7}, {"/m~0n", 8}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        CHECK_EQ_INT(json_integer_value(auth_json_pointer(d, ints[i].p)), ints[i].v);
    const char *absent[] = {"/foo/2", "/foo/01", "/foo/-", "/foo/x", "/nope", "foo", "/m~2n",
                            "/m~", "/foo/0/x", "/foo/99999999999"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        CHECK(auth_json_pointer(d, absent[i]) == NULL);
    json_decref(d);
}

int main(void)
{
    read_s = sv("datasets:read", "reader");
    reload_s = sv("datasets:reload", NULL);
    tenants = sv(NULL, NULL);
    struct tl_case cases[] = {
        TEST_CASE(b64url_strict),       TEST_CASE(parse_ok),
        TEST_CASE(every_algorithm_name), TEST_CASE(rfc8725_header_attacks),
        TEST_CASE(shape_attacks),       TEST_CASE(size_and_depth_bounds),
        TEST_CASE(claims_iss_aud_exp),  TEST_CASE(claims_scopes),
        TEST_CASE(claims_tenants),      TEST_CASE(json_pointer_rfc6901),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    strvec_free(&read_s);
    strvec_free(&reload_s);
    return rc;
}
