/*
 * The functions user SQL may call (src/sql/gate.c): scalar, aggregate and
 * window functions and system macros that read nothing but their arguments.
 *
 * How it was made: every distinct name of duckdb_functions() in DuckDB 1.4.4
 * with function_type scalar, aggregate or macro, minus (a) names matching
 * ^current_|^has_.*_privilege|^pg_|sql|duckdb|secret|setting|config|
 * ^write_log|log_message|^version$|^nextval$|^currval$|^getvariable$|
 * ^get_block_size$|^format_type$|^inet_|description$|^txid|^error$|
 * checkpoint|extension|^which_secret|^enable_|^disable_|^get_current_time|
 * ^current (catalog, settings, secrets, sequences, logs, SQL-in-a-string),
 * (b) macros whose definition names duckdb_, pragma_, current_ or system,
 * (c) __internal_* compression helpers, in_search_path and
 * json_serialize_plan (it plans SQL given as a string), (d) the functions
 * that read or build aggregate states (finalize, combine, cast_to_type: a
 * state is a raw struct whose strings are pointers, so a forged one reads or
 * crashes the process; EXPORT_STATE is refused by gate.c); plus the window
 * functions and unnest/unlist in a select list, which duckdb_functions() does
 * not list as scalars, pg_typeof (it names its argument's type), and PostgreSQL's
 * to_char and overlay, which vitrine defines (engine/functions.c; so does
 * to_timestamp(text, fmt)). Some names here are bounded wrappers of the
 * built-in of that name (functions.c): a call past their limits is refused
 * when it runs. Table functions have
 * their own, much shorter list in gate.c. Sorted, for bsearch;
 * tests/unit/sql/test_gate.c checks that every name exists in DuckDB and
 * that the dangerous ones are absent.
 */
#include <stdlib.h>
#include <string.h>

#include "sql/sql.h"

static const char *const allowed[] = {
    "!__postfix", "!~~", "!~~*", "%", "&", "&&", "*", "**", "+", "-", "->>", "/", "//", "<->",
    "<<", "<=>", "<@", ">>", "@", "@>", "^", "^@", "abs", "acos", "acosh", "add", "age",
    "aggregate", "alias", "any_value", "apply", "approx_count_distinct", "approx_quantile",
    "approx_top_k", "arbitrary", "arg_max", "arg_max_null", "arg_min", "arg_min_null", "argmax",
    "argmin", "array_agg", "array_aggr", "array_aggregate", "array_append", "array_apply",
    "array_cat", "array_concat", "array_contains", "array_cosine_distance",
    "array_cosine_similarity", "array_cross_product", "array_distance", "array_distinct",
    "array_dot_product", "array_extract", "array_filter", "array_grade_up", "array_has",
    "array_has_all", "array_has_any", "array_indexof", "array_inner_product", "array_intersect",
    "array_length", "array_negative_dot_product", "array_negative_inner_product",
    "array_pop_back", "array_pop_front", "array_position", "array_prepend", "array_push_back",
    "array_push_front", "array_reduce", "array_resize", "array_reverse", "array_reverse_sort",
    "array_select", "array_slice", "array_sort", "array_to_json", "array_to_string",
    "array_to_string_comma_default", "array_transform", "array_unique", "array_value",
    "array_where", "array_zip", "ascii", "asin", "asinh", "atan", "atan2", "atanh", "avg",
    "bar", "base64", "bin", "bit_and", "bit_count", "bit_length", "bit_or", "bit_position",
    "bit_xor", "bitstring", "bitstring_agg", "bool_and", "bool_or", "can_cast_implicitly",
    "cardinality", "cbrt", "ceil", "ceiling", "century", "char_length",
    "character_length", "chr", "concat", "concat_ws", "constant_or_null", "contains",
    "corr", "cos", "cosh", "cot", "count", "count_if", "count_star", "countif", "covar_pop",
    "covar_samp", "create_sort_key", "cume_dist", "damerau_levenshtein", "date_add",
    "date_diff", "date_part", "date_sub", "date_trunc", "datediff", "datepart", "datesub",
    "datetrunc", "day", "dayname", "dayofmonth", "dayofweek", "dayofyear", "decade", "decode",
    "degrees", "dense_rank", "divide", "editdist3", "element_at", "encode", "ends_with",
    "entropy", "enum_code", "enum_first", "enum_last", "enum_range", "enum_range_boundary",
    "epoch", "epoch_ms", "epoch_ns", "epoch_us", "equi_width_bins", "era", "even", "exp",
    "factorial", "favg", "fdiv", "fill", "filter", "first", "first_value",
    "flatten", "floor", "fmod", "format", "formatReadableDecimalSize", "formatReadableSize",
    "format_bytes", "format_pg_type", "from_base64", "from_binary", "from_hex", "from_json",
    "from_json_strict", "fsum", "gamma", "gcd", "gen_random_uuid", "generate_series",
    "generate_subscripts", "geomean", "geometric_mean", "get_bit", "grade_up", "greatest",
    "greatest_common_divisor", "group_concat", "hamming", "hash", "hex", "histogram",
    "histogram_exact", "hour", "icu_collate_af", "icu_collate_am", "icu_collate_ar",
    "icu_collate_ar_sa", "icu_collate_as", "icu_collate_az", "icu_collate_be", "icu_collate_bg",
    "icu_collate_bn", "icu_collate_bo", "icu_collate_br", "icu_collate_bs", "icu_collate_ca",
    "icu_collate_ceb", "icu_collate_chr", "icu_collate_cs", "icu_collate_cy", "icu_collate_da",
    "icu_collate_de", "icu_collate_de_at", "icu_collate_dsb", "icu_collate_dz",
    "icu_collate_ee", "icu_collate_el", "icu_collate_en", "icu_collate_en_us", "icu_collate_eo",
    "icu_collate_es", "icu_collate_et", "icu_collate_fa", "icu_collate_fa_af", "icu_collate_ff",
    "icu_collate_fi", "icu_collate_fil", "icu_collate_fo", "icu_collate_fr",
    "icu_collate_fr_ca", "icu_collate_fy", "icu_collate_ga", "icu_collate_gl", "icu_collate_gu",
    "icu_collate_ha", "icu_collate_haw", "icu_collate_he", "icu_collate_he_il",
    "icu_collate_hi", "icu_collate_hr", "icu_collate_hsb", "icu_collate_hu", "icu_collate_hy",
    "icu_collate_id", "icu_collate_id_id", "icu_collate_ig", "icu_collate_is", "icu_collate_it",
    "icu_collate_ja", "icu_collate_ka", "icu_collate_kk", "icu_collate_kl", "icu_collate_km",
    "icu_collate_kn", "icu_collate_ko", "icu_collate_kok", "icu_collate_ku", "icu_collate_ky",
    "icu_collate_lb", "icu_collate_lkt", "icu_collate_ln", "icu_collate_lo", "icu_collate_lt",
    "icu_collate_lv", "icu_collate_mk", "icu_collate_ml", "icu_collate_mn", "icu_collate_mr",
    "icu_collate_ms", "icu_collate_mt", "icu_collate_my", "icu_collate_nb", "icu_collate_nb_no",
    "icu_collate_ne", "icu_collate_nl", "icu_collate_nn", "icu_collate_noaccent",
    "icu_collate_om", "icu_collate_or", "icu_collate_pa", "icu_collate_pa_in", "icu_collate_pl",
    "icu_collate_ps", "icu_collate_pt", "icu_collate_ro", "icu_collate_ru", "icu_collate_sa",
    "icu_collate_se", "icu_collate_si", "icu_collate_sk", "icu_collate_sl", "icu_collate_smn",
    "icu_collate_sq", "icu_collate_sr", "icu_collate_sr_ba", "icu_collate_sr_me",
    "icu_collate_sr_rs", "icu_collate_sv", "icu_collate_sw", "icu_collate_ta", "icu_collate_te",
    "icu_collate_th", "icu_collate_tk", "icu_collate_to", "icu_collate_tr", "icu_collate_ug",
    "icu_collate_uk", "icu_collate_ur", "icu_collate_uz", "icu_collate_vi", "icu_collate_wae",
    "icu_collate_wo", "icu_collate_xh", "icu_collate_yi", "icu_collate_yo", "icu_collate_yue",
    "icu_collate_yue_cn", "icu_collate_zh", "icu_collate_zh_cn", "icu_collate_zh_hk",
    "icu_collate_zh_mo", "icu_collate_zh_sg", "icu_collate_zh_tw", "icu_collate_zu",
    "icu_sort_key", "ilike_escape", "instr", "is_histogram_other_bin", "isfinite", "isinf",
    "isnan", "isodow", "isoyear", "jaccard", "jaro_similarity", "jaro_winkler_similarity",
    "json", "json_array", "json_array_length", "json_contains", "json_exists", "json_extract",
    "json_extract_path", "json_extract_path_text", "json_extract_string", "json_group_array",
    "json_group_object", "json_group_structure", "json_keys", "json_merge_patch", "json_object",
    "json_pretty", "json_quote", "json_structure", "json_transform", "json_transform_strict",
    "json_type", "json_valid", "json_value", "julian", "kahan_sum", "kurtosis", "kurtosis_pop",
    "lag", "last", "last_day", "last_value", "lcase", "lcm", "lead", "least",
    "least_common_multiple", "left", "left_grapheme", "len", "length", "length_grapheme",
    "levenshtein", "lgamma", "like_escape", "list", "list_aggr", "list_aggregate",
    "list_any_value", "list_append", "list_apply", "list_approx_count_distinct", "list_avg",
    "list_bit_and", "list_bit_or", "list_bit_xor", "list_bool_and", "list_bool_or", "list_cat",
    "list_concat", "list_contains", "list_cosine_distance", "list_cosine_similarity",
    "list_count", "list_distance", "list_distinct", "list_dot_product", "list_element",
    "list_entropy", "list_extract", "list_filter", "list_first", "list_grade_up", "list_has",
    "list_has_all", "list_has_any", "list_histogram", "list_indexof", "list_inner_product",
    "list_intersect", "list_kurtosis", "list_kurtosis_pop", "list_last", "list_mad", "list_max",
    "list_median", "list_min", "list_mode", "list_negative_dot_product",
    "list_negative_inner_product", "list_pack", "list_position", "list_prepend", "list_product",
    "list_reduce", "list_resize", "list_reverse", "list_reverse_sort", "list_select",
    "list_sem", "list_skewness", "list_slice", "list_sort", "list_stddev_pop",
    "list_stddev_samp", "list_string_agg", "list_sum", "list_transform", "list_unique",
    "list_value", "list_var_pop", "list_var_samp", "list_where", "list_zip", "listagg", "ln",
    "log", "log10", "log2", "lower", "lpad", "ltrim", "mad", "make_date", "make_time",
    "make_timestamp", "make_timestamp_ms", "make_timestamp_ns", "make_timestamptz", "map",
    "map_concat", "map_contains", "map_contains_entry", "map_contains_value", "map_entries",
    "map_extract", "map_extract_value", "map_from_entries", "map_keys", "map_to_pg_oid",
    "map_values", "max", "max_by", "md5", "md5_number", "md5_number_lower", "md5_number_upper",
    "mean", "median", "microsecond", "millennium", "millisecond", "min", "min_by", "minute",
    "mismatches", "mod", "mode", "month", "monthname", "multiply", "nanosecond", "nextafter",
    "nfc_normalize", "normalized_interval", "not_ilike_escape", "not_like_escape", "now",
    "nth_value", "ntile", "nullif", "octet_length", "ord", "overlay", "parse_dirname", "parse_dirpath",
    "parse_filename", "parse_path", "percent_rank", "pg_typeof", "pi", "position", "pow", "power", "prefix",
    "printf", "product", "quantile", "quantile_cont", "quantile_disc", "quarter", "radians",
    "random", "range", "rank", "reduce", "regexp_escape", "regexp_extract",
    "regexp_extract_all", "regexp_full_match", "regexp_matches", "regexp_replace",
    "regexp_split_to_array", "regexp_split_to_table", "regr_avgx", "regr_avgy", "regr_count",
    "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
    "remap_struct", "repeat", "replace", "replace_type", "reservoir_quantile", "reverse",
    "right", "right_grapheme", "round", "round_even", "roundbankers", "row", "row_number",
    "row_to_json", "rpad", "rtrim", "second", "sem", "session_user", "set_bit", "setseed",
    "sha1", "sha256", "sign", "signbit", "sin", "sinh", "skewness", "split", "split_part",
    "sqrt", "starts_with", "stats", "stddev", "stddev_pop", "stddev_samp", "str_split",
    "str_split_regex", "strftime", "string_agg", "string_split", "string_split_regex",
    "string_to_array", "strip_accents", "strlen", "strpos", "strptime", "struct_concat",
    "struct_contains", "struct_extract", "struct_extract_at", "struct_has", "struct_indexof",
    "struct_insert", "struct_pack", "struct_position", "struct_update", "substr", "substring",
    "substring_grapheme", "subtract", "suffix", "sum", "sum_no_overflow", "sumkahan", "tan",
    "tanh", "time_bucket", "timetz_byte_comparable", "timezone", "timezone_hour",
    "timezone_minute", "to_base", "to_base64", "to_binary", "to_centuries", "to_char", "to_days",
    "to_decades", "to_hex", "to_hours", "to_json", "to_microseconds", "to_millennia",
    "to_milliseconds", "to_minutes", "to_months", "to_quarters", "to_seconds", "to_timestamp",
    "to_weeks", "to_years", "today", "transaction_timestamp", "translate", "trim", "trunc",
    "try_strptime", "typeof", "ucase", "unbin", "unhex", "unicode", "union_extract",
    "union_tag", "union_value", "unlist", "unnest", "unpivot_list", "upper", "url_decode", "url_encode", "uuid",
    "uuid_extract_timestamp", "uuid_extract_version", "uuidv4", "uuidv7", "var_pop", "var_samp",
    "variance", "variant_extract", "variant_typeof", "vector_type", "wavg", "week", "weekday",
    "weekofyear", "weighted_avg", "xor", "year", "yearweek", "|", "||", "~", "~~", "~~*", "~~~",
};

static int cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool sql_function_allowed(const char *name)
{
    return bsearch(&name, allowed, sizeof allowed / sizeof allowed[0], sizeof allowed[0], cmp) !=
           NULL;
}

size_t sql_allowed_functions(const char *const **out)
{
    *out = allowed;
    return sizeof allowed / sizeof allowed[0];
}

/* The macros among the allowed names, with their expansion (sql.h
 * sql_macro_expansion): DuckDB 1.4.4's (duckdb_functions() of function_type
 * macro, main and pg_catalog) and engine/functions.c's bounded wrappers.
 * fanout: the most copies of one argument the body makes; body: its
 * expression nodes; macros the body calls are expanded in both, overloads
 * take the largest. Written from test_gate's computation over DuckDB's own
 * catalogue (json_serialize_sql of each definition), which checks that the
 * two agree. Sorted, for bsearch. */
static const struct macro_cost {
    const char *name;
    unsigned short fanout, body;
} macros[] = {
    {"array_append", 1, 6}, {"array_intersect", 1, 10}, {"array_pop_back", 2, 7},
    {"array_pop_front", 1, 4}, {"array_prepend", 1, 6}, {"array_push_back", 1, 4},
    {"array_push_front", 1, 4}, {"array_resize", 1, 7}, {"array_reverse", 1, 6},
    {"array_to_json", 1, 10}, {"array_to_string", 1, 5}, {"array_to_string_comma_default", 1, 5},
    {"base64", 1, 6}, {"bin", 1, 4}, {"bitstring", 1, 7}, {"damerau_levenshtein", 2, 7},
    {"date_add", 1, 3}, {"editdist3", 2, 7}, {"equi_width_bins", 1, 8}, {"fdiv", 1, 4},
    {"fmod", 2, 8}, {"format", 1, 18}, {"format_pg_type", 15, 74}, {"from_json", 1, 4},
    {"from_json_strict", 1, 4}, {"generate_series", 2, 6}, {"generate_subscripts", 2, 15},
    {"geomean", 1, 4}, {"geometric_mean", 1, 5}, {"hex", 1, 4}, {"jaro_similarity", 2, 8},
    {"jaro_winkler_similarity", 2, 8}, {"json", 1, 3}, {"json_array", 1, 102},
    {"json_contains", 1, 6}, {"json_group_array", 2, 16}, {"json_group_object", 2, 24},
    {"json_group_structure", 2, 23}, {"json_merge_patch", 1, 27}, {"json_object", 1, 152},
    {"json_pretty", 1, 2}, {"json_quote", 1, 3},
    {"json_structure", 1, 3}, {"json_transform", 1, 4}, {"json_transform_strict", 1, 4},
    {"levenshtein", 2, 7}, {"list_any_value", 1, 3}, {"list_append", 1, 4},
    {"list_approx_count_distinct", 1, 3}, {"list_avg", 1, 3}, {"list_bit_and", 1, 3},
    {"list_bit_or", 1, 3}, {"list_bit_xor", 1, 3}, {"list_bool_and", 1, 3}, {"list_bool_or", 1, 3},
    {"list_count", 1, 3}, {"list_entropy", 1, 3}, {"list_first", 1, 3}, {"list_histogram", 1, 3},
    {"list_intersect", 1, 8}, {"list_kurtosis", 1, 3}, {"list_kurtosis_pop", 1, 3},
    {"list_last", 1, 3}, {"list_mad", 1, 3}, {"list_max", 1, 3}, {"list_median", 1, 3},
    {"list_min", 1, 3}, {"list_mode", 1, 3}, {"list_prepend", 1, 4}, {"list_product", 1, 3},
    {"list_resize", 1, 7}, {"list_reverse", 1, 5}, {"list_sem", 1, 3}, {"list_skewness", 1, 3},
    {"list_stddev_pop", 1, 3}, {"list_stddev_samp", 1, 3}, {"list_string_agg", 1, 3},
    {"list_sum", 1, 3}, {"list_var_pop", 1, 3}, {"list_var_samp", 1, 3}, {"lpad", 1, 8},
    {"map_contains_entry", 1, 6}, {"map_contains_value", 1, 4}, {"map_to_pg_oid", 17, 70},
    {"md5_number_lower", 1, 9}, {"md5_number_upper", 1, 9}, {"nullif", 2, 6}, {"overlay", 2, 15},
    {"pg_typeof", 1, 3}, {"printf", 1, 18}, {"range", 2, 6}, {"regexp_escape", 1, 4},
    {"regexp_replace", 1, 24}, {"regexp_split_to_table", 1, 4}, {"repeat", 1, 19}, {"replace", 1, 4}, {"round_even", 3, 23},
    {"roundbankers", 3, 29}, {"row_to_json", 1, 10}, {"rpad", 1, 8}, {"session_user", 0, 1},
    {"split_part", 2, 16}, {"strftime", 1, 4}, {"to_base64", 1, 6}, {"to_binary", 1, 4},
    {"to_char", 1, 4}, {"to_hex", 1, 4}, {"to_json", 1, 3}, {"to_timestamp", 1, 3},
    {"url_encode", 1, 4}, {"wavg", 2, 15}, {"weighted_avg", 2, 11},
};

static int cmp_macro(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, ((const struct macro_cost *)b)->name);
}

bool sql_macro_expansion(const char *name, unsigned *fanout, unsigned *body)
{
    const struct macro_cost *m =
        name ? bsearch(&name, macros, sizeof macros / sizeof macros[0], sizeof macros[0],
                       cmp_macro)
             : NULL;
    if (!m)
        return false;
    *fanout = m->fanout;
    *body = m->body;
    return true;
}
