/*
 * Shortest round-trip decimal digits of binary floating point. The C side
 * gets only the digits and the decimal point; the JSON text layout (exponent
 * rules, ".0") is json_format.c's.
 *
 * json_dtoa_shortest / json_ftoa_shortest: our Schubfach (R. Giulietti, "The
 * Schubfach way to render doubles"), in dtoa.c, with its table of powers of
 * ten generated exactly by dtoa_gen.py. json_dc_*: the same contract through
 * Debian's libdouble-conversion (dtoa_dc.cc), kept as the reference
 * implementation for the tests and the benchmark.
 */
#ifndef VT_ENCODE_DTOA_H
#define VT_ENCODE_DTOA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the shortest digit string d1..dk (k <= 17, no trailing zeros, no
 * sign, not NUL-terminated) such that 0.d1..dk * 10^point reads back as |v|;
 * of several such strings, the one closest to |v|. v must be finite and
 * nonzero. Returns k. `digits` needs 20 bytes. */
int json_dtoa_shortest(double v, char *digits, int *out_point);
/* The same result as an integer: |v| ~ d * 10^e with d the shortest digits
 * (no trailing zeros, d < 10^17). v finite and nonzero. */
uint64_t json_dtoa_decimal(double v, int *out_e);
uint64_t json_ftoa_decimal(float v, int *out_e);
/* The same for a float32 (k <= 9): reads back as the same float. */
int json_ftoa_shortest(float v, char *digits, int *out_point);

/* Two-phase formatting for whole vectors (json_rows): the digit search of
 * one value is a long chain of dependent multiplications; running it over a
 * vector first, then writing the text, lets the CPU overlap neighbouring
 * values. json_fmt_fdec writes what json_fmt_double/float would. */
enum { JSON_FDEC_DEC, JSON_FDEC_INT, JSON_FDEC_ZERO, JSON_FDEC_NULL };
struct json_fdec {
    uint64_t d;   /* digits (DEC: maybe with trailing zeros; INT: the value) */
    int32_t e;    /* DEC: value = d * 10^e */
    uint8_t kind; /* JSON_FDEC_* */
    uint8_t neg;
};
void json_dtoa_prepare(const double *v, size_t n, struct json_fdec *out);
/* The same results, with a fast path for short decimals (prices, amounts:
 * values that are m / 10^k exactly for small m) that skips the digit search.
 * *hint carries what the column taught between calls (start zeroed). */
#define JSON_DTOA_SHORT_MAX 15
struct json_dtoa_hint {
    int k;         /* the step 10^-k tried first; 0: none learned yet */
    unsigned cold; /* batches in a row without a short decimal */
};
void json_dtoa_prepare_short(const double *v, size_t n, struct json_fdec *out,
                             struct json_dtoa_hint *hint);
void json_ftoa_prepare(const float *v, size_t n, struct json_fdec *out);
char *json_fmt_fdec(char *o, const struct json_fdec *f);
/* n values back to back (mark NULL rows JSON_FDEC_NULL first), each after
 * the pre_len bytes at pre (which has JSON_FMT_SLACK readable bytes past
 * them; the row writer's key); ends[i] gets the end of value i as an offset
 * from base. Room: n * (JSON_FMT_MAX_DOUBLE + pre_len) plus slack. */
char *json_fmt_fdecs(char *o, const struct json_fdec *f, size_t n, const char *base, size_t *ends,
                     const char *pre, size_t pre_len);

int json_dc_dtoa_shortest(double v, char *digits, int *out_point);
int json_dc_ftoa_shortest(float v, char *digits, int *out_point);

#ifdef __cplusplus
}
#endif

#endif
