/*
 * libFuzzer target for Accept-Encoding parsing and the coding choice
 * (src/http/encoding.c), and the Accept media-type lookup beside it. The input is the header value; the choice is checked
 * against the rules it must obey (no acceptable coding beats the pick, q=0 is
 * never picked, q-values stay in range). Build: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/encoding.h"

/* q the header gives `e` (by name, else through *), -2 if neither */
static int effective(const struct http_accept_encoding *ae, enum http_encoding e)
{
    if (ae->q[e] != HTTP_Q_UNLISTED)
        return ae->q[e];
    if (ae->star_q != HTTP_Q_UNLISTED)
        return ae->star_q;
    return -2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *h = malloc(size + 1);
    memcpy(h, data, size);
    h[size] = '\0';

    struct http_accept_encoding ae;
    http_accept_encoding_parse(h, &ae);
    if (!ae.present)
        abort();
    for (int e = 0; e < HTTP_ENC__COUNT; e++)
        if (ae.q[e] != HTTP_Q_UNLISTED && (ae.q[e] < 0 || ae.q[e] > 1000))
            abort();
    if (ae.star_q != HTTP_Q_UNLISTED && (ae.star_q < 0 || ae.star_q > 1000))
        abort();

    enum http_encoding pick = http_accept_encoding_pick(&ae);
    if ((int)pick < 0 || pick >= HTTP_ENC__COUNT)
        abort();
    if (pick != HTTP_ENC_IDENTITY) {
        int qp = effective(&ae, pick);
        if (qp <= 0)
            abort(); /* an excluded or unoffered coding was chosen */
        for (int e = 1; e < HTTP_ENC__COUNT; e++)
            if (effective(&ae, (enum http_encoding)e) > qp)
                abort(); /* a better coding was passed over */
        if (effective(&ae, HTTP_ENC_IDENTITY) > qp)
            abort();
    } else {
        /* identity only loses to nothing: any coding with q above identity's
         * own (explicit) q would have been picked */
        int qi = effective(&ae, HTTP_ENC_IDENTITY);
        for (int e = 1; e < HTTP_ENC__COUNT; e++) {
            int q = effective(&ae, (enum http_encoding)e);
            if (q > 0 && q >= qi)
                abort();
        }
    }
    /* the wrappers must agree and never crash on the same bytes */
    if (http_encoding_choose(h, true, "application/json", HTTP_BODY_LEN_UNKNOWN) != pick)
        abort();
    if (http_encoding_choose(h, false, "application/json", 1 << 20) != HTTP_ENC_IDENTITY)
        abort();
    (void)http_content_type_compressible(h);
    /* Accept: a q in range or "unlisted", for any bytes */
    int qa = http_accept_media_q(h, "application/vnd.apache.arrow.stream");
    int qj = http_accept_media_q(h, "application/json");
    if (qa != HTTP_Q_UNLISTED && (qa < 0 || qa > 1000))
        abort();
    if (qj != HTTP_Q_UNLISTED && (qj < 0 || qj > 1000))
        abort();
    free(h);
    return 0;
}
