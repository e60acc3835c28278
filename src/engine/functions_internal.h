/*
 * What functions.c and pg_dates.c share (not for other folders: engine.h is
 * the contract). Both are DuckDB scalar functions of the process database,
 * installed by eng_functions_install.
 */
#ifndef VT_ENGINE_FUNCTIONS_INTERNAL_H
#define VT_ENGINE_FUNCTIONS_INTERNAL_H

#include <duckdb.h>

/* Ends the call with the error "what: <message>". */
void eng_fn_fail(duckdb_function_info info, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a call refused by a limit: the message, which names the
 * function and the limit, carries vt_limit_marker() (util/errors.h), so the
 * statement fails as limit_exceeded wherever it ran. */
void eng_fn_limit(duckdb_function_info info, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* to_char(TIMESTAMP, VARCHAR) -> VARCHAR and to_timestamp(VARCHAR, VARCHAR)
 * -> TIMESTAMPTZ with PostgreSQL's template patterns (pg_dates.c). */
void eng_pg_to_char(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out);
void eng_pg_to_timestamp(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out);

#endif
