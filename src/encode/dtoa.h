/*
 * Shortest round-trip digits for binary floating point, through Debian's
 * libdouble-conversion (Grisu3 with an exact bignum fallback, the code V8 and
 * Firefox use). The C side gets only the digits and the decimal point; the
 * JSON text layout (exponent rules, ".0") is ours, in json_format.c.
 */
#ifndef VT_ENCODE_DTOA_H
#define VT_ENCODE_DTOA_H

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the shortest digit string d1..dk (k <= 17, no trailing zeros, no
 * sign, not NUL-terminated) such that 0.d1..dk * 10^point read back gives |v|
 * exactly. v must be finite; 0 gives "0" with point 1. Returns k. `digits`
 * needs 18 bytes. */
int json_dtoa_shortest(double v, char *digits, int *out_point);
/* The same for a float32 (k <= 9): the shortest digits that read back as a
 * float give the same float. */
int json_ftoa_shortest(float v, char *digits, int *out_point);

#ifdef __cplusplus
}
#endif

#endif
