/*
 * extern "C" shim over double-conversion's DoubleToAscii in SHORTEST mode.
 * Kept to one tiny translation unit so the rest of the encoder stays C17.
 * (Chosen over an own Ryu/Schubfach port: it is a proven, packaged library and
 * measured fast enough for the JSON hot path; see bench/ and the README note.)
 */
#include "encode/dtoa.h"

#include <double-conversion/double-to-string.h>

using double_conversion::DoubleToStringConverter;

extern "C" int json_dtoa_shortest(double v, char *digits, int *out_point)
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

extern "C" int json_ftoa_shortest(float v, char *digits, int *out_point)
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
