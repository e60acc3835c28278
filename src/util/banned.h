/*
 * Functions no file under src/ may call, made compile errors: the Makefile
 * passes `-include src/util/banned.h` for every src/ file (and the fuzz
 * builds of them), so nobody has to remember to include it.
 *
 *   sprintf, strcpy, strcat  no bound on the destination: snprintf or strbuf
 *   atoi                     no error detection: strtol/strtoll with an end check
 *   sscanf                   silent partial matches, unbounded %s: parse by hand
 *   strtok                   hidden global state, not thread-safe: strchr/strcspn
 *
 * The system headers that declare them come first (their own include guards
 * make later includes no-ops); a call then expands to an undeclared name and
 * the build stops at the line that made it.
 */
#ifndef VT_UTIL_BANNED_H
#define VT_UTIL_BANNED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VT_BANNED(func) sorry_##func##_is_banned_see_util_banned_h

#undef sprintf
#define sprintf(...) VT_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) VT_BANNED(vsprintf)
#undef strcpy
#define strcpy(...) VT_BANNED(strcpy)
#undef strcat
#define strcat(...) VT_BANNED(strcat)
#undef atoi
#define atoi(...) VT_BANNED(atoi)
#undef sscanf
#define sscanf(...) VT_BANNED(sscanf)
#undef strtok
#define strtok(...) VT_BANNED(strtok)

#endif
