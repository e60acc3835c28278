/*
 * extern "C" shim over Debian's libdouble-conversion (DoubleToAscii in
 * SHORTEST mode: Grisu3 with an exact bignum fallback, the code V8 uses).
 * Not on the hot path any more: dtoa.c (Schubfach) measured ~4x faster. It
 * stays as the independent reference the unit tests compare dtoa.c against.
 */
#include "encode/dtoa.h"

#include <double-conversion/double-to-string.h>

using double_conversion::DoubleToStringConverter;

extern "C" int json_dc_dtoa_shortest(double v, char *digits, int *out_point)
{
    char buf[DoubleToStringConverter::kBase10MaximalLength + 1];
    bool sign = false;
    int len = 0, point = 0;
    DoubleToStringConverter::DoubleToAscii(v, DoubleToStringConverter::SHORTEST, 0, buf,
                                           (int)sizeof buf, &sign, &len, &point);
    for (int i = 0; i < len; i++)
        digits[i] = buf[i];
    *out_point = point;
    return len;
}

extern "C" int json_dc_ftoa_shortest(float v, char *digits, int *out_point)
{
    char buf[DoubleToStringConverter::kBase10MaximalLength + 1];
    bool sign = false;
    int len = 0, point = 0;
    DoubleToStringConverter::DoubleToAscii((double)v, DoubleToStringConverter::SHORTEST_SINGLE,
                                           0, buf, (int)sizeof buf, &sign, &len, &point);
    for (int i = 0; i < len; i++)
        digits[i] = buf[i];
    *out_point = point;
    return len;
}
