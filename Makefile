# vitrine build. `make` builds build/vitrine; `make check` runs every test;
# `make run` serves the bundled sample data; `make bench` prints benchmark ratios.
# SAN=1 builds with ASan+UBSan (use with BUILD=build-asan).

BUILD   ?= build
SAN     ?=
CC      ?= gcc
PYTHON  ?= /usr/bin/python3

DUCKDB_DIR := third_party/duckdb
VERSION    := $(shell cat VERSION)
GIT_SHA    := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
BUILD_TIME := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
TARGET     := $(shell $(CC) -dumpmachine)

WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wvla
DEFS    := -D_GNU_SOURCE -DVT_VERSION='"$(VERSION)"'
OPT     := -O2
ifeq ($(SAN),1)
OPT     := -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -DVT_PROFILE_DEBUG
SANLD   := -fsanitize=address,undefined
endif
CFLAGS  := -std=c17 -g -fno-omit-frame-pointer -pthread $(OPT) $(WARN) $(DEFS) -Isrc -isystem $(DUCKDB_DIR) -MMD -MP
CXXFLAGS:= -std=c++17 -g -fno-omit-frame-pointer -pthread $(OPT) -Wall -Wextra -Werror -Isrc -MMD -MP
RPATH   := -Wl,-rpath,'$$ORIGIN/../third_party/duckdb:$$ORIGIN/../../third_party/duckdb:$$ORIGIN/../../../third_party/duckdb'
# No -lcurl: src/util/curl_load.c opens libcurl at its first use (its ~35
# libraries cost ~11M instructions at every exec; most configurations never
# call it).
LDLIBS  := -L$(DUCKDB_DIR) -lduckdb $(RPATH) -ljansson -lz -lbrotlienc -lbrotlidec \
           -lzstd -lxxhash -lexpat -lssl -lcrypto -lsystemd -ldouble-conversion -lroaring -lstdc++ -lpthread -lm
LDFLAGS := -pthread $(SANLD)

LIB_C    := $(filter-out src/main.c,$(shell find src -name '*.c' | sort))
LIB_CC   := $(shell find src -name '*.cc' | sort)
LIB_OBJ  := $(LIB_C:%.c=$(BUILD)/obj/%.o) $(LIB_CC:%.cc=$(BUILD)/obj/%.o)
# Embedded UIs (src/ui): each built into $(BUILD)/ui/<name>, then turned into
# a generated C table by scripts/ui-embed.py. A UI whose tools are missing
# (no `npm ci` in ui/explorer, no mkdocs) is embedded empty and answers 404.
UI_GEN   := $(BUILD)/gen/ui_explorer.c $(BUILD)/gen/ui_docs.c $(BUILD)/gen/ui_swagger.c
LIB_OBJ  += $(UI_GEN:$(BUILD)/gen/%.c=$(BUILD)/obj/gen/%.o)
UNIT_SRC := $(shell find tests/unit -name 'test_*.c' | sort)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(shell find tools -name '*.c' 2>/dev/null | sort)
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/%)

.PHONY: all deps unit e2e contract-check check run bench clean fuzz hostile fuzz-smoke fuzz-run-one \
        fuzz-campaign fuzz-merge fuzz-rates docs-config
all: $(BUILD)/vitrine $(TOOL_BIN)

deps: $(DUCKDB_DIR)/libduckdb.so

$(DUCKDB_DIR)/libduckdb.so $(DUCKDB_DIR)/duckdb.h:
	./scripts/fetch-duckdb.sh

$(BUILD)/obj/%.o: %.c | $(DUCKDB_DIR)/duckdb.h
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c src/ui/ui.h
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CFLAGS) -O0 -c $< -o $@

UI_EXPLORER_SRC := $(shell find ui/explorer -path ui/explorer/node_modules -prune -o \
                     -type f ! -name '*.md' -print 2>/dev/null)
# (node_modules' lock stamp too: a UI built empty before `npm ci` is rebuilt after it)
$(BUILD)/ui/explorer.stamp: $(UI_EXPLORER_SRC) $(wildcard ui/explorer/node_modules/.package-lock.json)
	@mkdir -p $(BUILD)/ui
	@rm -rf $(BUILD)/ui/explorer
	@if [ -x ui/explorer/node_modules/.bin/vite ]; then \
	    echo "  VITE ui/explorer"; \
	    (cd ui/explorer && node_modules/.bin/vite build --logLevel warn \
	        --outDir $(abspath $(BUILD))/ui/explorer --emptyOutDir) || exit 1; \
	else \
	    echo "warning: ui/explorer/node_modules is missing (run scripts/install-deps.sh): building without the Explorer"; \
	fi
	@touch $@

UI_DOCS_SRC := $(wildcard docs/*.md docs/*/*.md) ui/docs/mkdocs.yml $(wildcard ui/docs/theme/*.* ui/docs/theme/*/*)
# (mkdocs itself too: a site built empty before it was installed is rebuilt after)
$(BUILD)/ui/docs.stamp: $(UI_DOCS_SRC) $(wildcard /usr/bin/mkdocs)
	@mkdir -p $(BUILD)/ui
	@rm -rf $(BUILD)/ui/docs
	@if command -v mkdocs >/dev/null; then \
	    echo "  MKDOCS docs"; \
	    mkdocs build -q --strict -f ui/docs/mkdocs.yml -d $(abspath $(BUILD))/ui/docs || exit 1; \
	else \
	    echo "warning: mkdocs is missing (run scripts/install-deps.sh): building without the docs site"; \
	fi
	@touch $@

# Swagger UI: the prebuilt files of the npm package swagger-ui-dist (pinned
# and integrity-checked by ui/swagger/package-lock.json, installed by
# scripts/install-deps.sh), under a folder named after its version (cached
# as immutable), with our page (ui/swagger/index.html, init.js, page.css).
SWAGGER_DIST    := ui/swagger/node_modules/swagger-ui-dist
SWAGGER_VERSION := $(shell sed -n 's/.*"swagger-ui-dist": *"\([^"]*\)".*/\1/p' ui/swagger/package.json)
$(BUILD)/ui/swagger.stamp: ui/swagger/index.html ui/swagger/init.js ui/swagger/page.css \
                           ui/swagger/package-lock.json \
                           $(wildcard ui/swagger/node_modules/.package-lock.json)
	@mkdir -p $(BUILD)/ui
	@rm -rf $(BUILD)/ui/swagger
	@if [ -f $(SWAGGER_DIST)/swagger-ui-bundle.js ] && \
	    grep -q '"version": "$(SWAGGER_VERSION)"' $(SWAGGER_DIST)/package.json; then \
	    echo "  SWAGGER swagger-ui-dist $(SWAGGER_VERSION)"; \
	    mkdir -p $(BUILD)/ui/swagger/$(SWAGGER_VERSION); \
	    cp $(addprefix $(SWAGGER_DIST)/,swagger-ui-bundle.js swagger-ui.css favicon-16x16.png \
	        favicon-32x32.png LICENSE NOTICE) $(BUILD)/ui/swagger/$(SWAGGER_VERSION)/; \
	    sed 's/@VERSION@/$(SWAGGER_VERSION)/g' ui/swagger/index.html > $(BUILD)/ui/swagger/index.html; \
	    cp ui/swagger/init.js ui/swagger/page.css $(BUILD)/ui/swagger/; \
	else \
	    echo "warning: swagger-ui-dist $(SWAGGER_VERSION) is missing (run scripts/install-deps.sh): building without Swagger UI"; \
	fi
	@touch $@

# Fonts other than woff2 (every browser that runs the Explorer reads
# it) and the gzipped sitemap are left out of the docs bundle.
UI_EMBED_explorer := --immutable-dir assets
UI_EMBED_swagger  := --immutable-dir $(SWAGGER_VERSION)
UI_EMBED_docs     := --exclude 'fonts/*.eot' --exclude 'fonts/*.svg' --exclude 'fonts/*.ttf' \
                     --exclude 'fonts/*.woff' \
                     --exclude 'fonts/*.otf' --exclude 'sitemap.xml.gz'
.PRECIOUS: $(BUILD)/gen/ui_%.c $(BUILD)/ui/%.stamp
$(BUILD)/gen/ui_%.c: $(BUILD)/ui/%.stamp scripts/ui-embed.py
	@$(PYTHON) scripts/ui-embed.py $* $(BUILD)/ui/$* $@ $(UI_EMBED_$*)
# Every src/ file: sprintf, strcpy, strcat, atoi, sscanf, strtok are compile errors.
BANNED := -include src/util/banned.h
$(BUILD)/obj/src/%.o: CFLAGS += $(BANNED)
$(BUILD)/obj/src/%.o: CXXFLAGS += $(BANNED)

# Build metadata reaches only /version (probes.c), through a generated header
# that is rewritten only when the version, commit or target changes: a
# rebuild of the same commit relinks nothing (build_time is when this commit
# was first built here).
BUILDINFO_H := $(BUILD)/gen/buildinfo.h
$(BUILDINFO_H): FORCE
	@mkdir -p $(dir $@)
	@key='$(VERSION) $(GIT_SHA) $(TARGET)'; \
	if ! head -n 1 $@ 2>/dev/null | grep -qxF "/* $$key */"; then \
	    { echo "/* $$key */"; \
	      echo '#define VT_BUILD_TIME "$(BUILD_TIME)"'; \
	      echo '#define VT_TARGET "$(TARGET)"'; \
	      $(if $(GIT_SHA),echo '#define VT_GIT_SHA "$(GIT_SHA)"';) } > $@; \
	fi
$(BUILD)/obj/src/api/probes.o: $(BUILDINFO_H)
$(BUILD)/obj/src/api/probes.o: CFLAGS += -include $(BUILDINFO_H)
.PHONY: FORCE deploy-check soak
FORCE:

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	@echo "  CXX $<"
	@$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/libvitrine.a: $(LIB_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(BUILD)/vitrine: $(BUILD)/obj/src/main.o $(BUILD)/libvitrine.a $(DUCKDB_DIR)/libduckdb.so
	@echo "  LD $@"
	@$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/src/main.o $(BUILD)/libvitrine.a $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/testlib.h $(BUILD)/libvitrine.a
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/libvitrine.a $(LDLIBS)

$(BUILD)/%: tools/%.c $(BUILD)/libvitrine.a
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libvitrine.a $(LDLIBS)

# Unit tests: every tests/unit/**/test_*.c is one binary; each prints "N passed, N failed".
# Under `make -jN` (CI: -j2) they run N at a time, each one's output printed
# whole when it ends (-O), the heaviest first so the lanes end together;
# every failure is reported. A test whose source mentions threads, sleeps,
# clocks, deadlines or time-outs runs alone afterwards: a neighbour would
# blur what it times.
UNIT_ALONE_RE  := pthread_create|usleep|nanosleep|sleep[(]|clock_gettime|CLOCK_|time_mono|elapsed|deadline|timeout
UNIT_ALONE_SRC := $(shell grep -lE '$(UNIT_ALONE_RE)' $(UNIT_SRC))
UNIT_HEAVY_SRC := $(addprefix tests/unit/,sources/test_delta_corpus.c \
                    encode/test_json_rows.c encode/test_json_dtoa.c index/test_index.c \
                    query/test_querygen.c)
UNIT_SHARED    := $(patsubst tests/unit/%.c,unit-run/%,$(filter-out $(UNIT_ALONE_SRC), \
                    $(filter $(UNIT_SRC),$(UNIT_HEAVY_SRC)) $(filter-out $(UNIT_HEAVY_SRC),$(UNIT_SRC))))
UNIT_ALONE_BIN := $(UNIT_ALONE_SRC:tests/unit/%.c=$(BUILD)/tests/%)
.PHONY: unit-shared
unit: $(UNIT_BIN)
	@fail=0; $(MAKE) --no-print-directory -k -O unit-shared || fail=1; \
	for t in $(UNIT_ALONE_BIN); do echo "== $$t"; $$t || fail=1; done; exit $$fail
unit-shared: $(UNIT_SHARED)
unit-run/%: $(BUILD)/tests/% FORCE
	@echo "== $<"; $<

# Black-box tests: the real binary on 127.0.0.1, driven by pytest and real clients.
# E2E_JOBS pytest workers (pytest-xdist; every test starts its own servers on
# port 0 in its own tmp_path; a worker takes whole modules, the longest first:
# tests/e2e/conftest.py SLOW_MODULES_FIRST), then the tests marked `serial` alone: those
# assert wall-clock bounds (a scrape under a millisecond, a flood answered
# within 100 ms) that a neighbour test would blur.
# Both passes record every response they get into $(CONTRACT_DIR)
# (tests/e2e/contract_rec.py); then contract-check validates them against the
# OpenAPI document each server served (issue 28 item 6), so `make check` (and
# its ASan run, with its own $(BUILD)) fails on an answer the document does
# not describe.
E2E_JOBS ?= 2
CONTRACT_DIR = $(abspath $(BUILD))/contract
e2e: all $(UNIT_BIN)
	rm -rf $(CONTRACT_DIR)
	VT_CONTRACT_DIR=$(CONTRACT_DIR) VITRINE_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -x \
	    -p xdist -n $(E2E_JOBS) --dist loadfile -m 'not serial' tests/e2e $(PYTEST_ARGS)
	VT_CONTRACT_DIR=$(CONTRACT_DIR) VITRINE_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -x \
	    -m serial tests/e2e $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory contract-check \
	    CONTRACT_MIN=$(if $(strip $(PYTEST_ARGS)),0,1000)

# The contract checked from outside (issue 28 item 6): the responses the last
# e2e run recorded, validated by Stoplight Prism's response validator against
# the document their server served (tests/e2e/contract/validate.cjs; ~10 s of
# CPU for a whole run's ~12,000 exchanges). Nothing recorded passes (a
# PYTEST_ARGS selection may start no server that serves a document); a whole
# suite's run asks for at least CONTRACT_MIN validated exchanges.
CONTRACT_MIN ?= 0
contract-check:
	cd tests/e2e && node contract/validate.cjs --min $(CONTRACT_MIN) $(CONTRACT_DIR)

# Unit tests first, then the black-box tests, one after the other (the
# black-box tests measure time-outs and must not share the CPU with them).
check: all $(UNIT_BIN)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory deploy-check
	@$(MAKE) --no-print-directory e2e

# The deployment files (deploy/): the Kubernetes manifests are the Helm chart
# rendered and pass the API schemas, the configs they carry pass check-config,
# the systemd unit passes systemd-analyze verify (deploy/check.sh).
deploy-check: $(BUILD)/vitrine
	@./deploy/check.sh $(abspath $(BUILD))

# The soak (not part of check; minutes): mixed HTTP, pgwire and MCP load with
# reloads on a writer and readers, RSS/fds/threads slopes, S3 faults, a full
# disk and kill -9 in every write path (tests/soak/soak.py; SOAK_SECS=1800
# for the 30-minute run).
SOAK_SECS ?= 300
soak: all
	VITRINE_BUILD=$(abspath $(BUILD)) SOAK_SECS=$(SOAK_SECS) $(PYTHON) tests/soak/soak.py

# The attack catalogue (issue 10): every tests/e2e/test_hostile_*.py against
# fresh servers. Part of `make check` too; this runs it alone (under 5 minutes).
hostile: all
	VITRINE_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q tests/e2e/test_hostile_*.py $(PYTEST_ARGS)

# docs/configuration.md is generated from the config schema table
# (src/config/schema.c); a unit test fails when the committed file is stale.
docs-config: $(BUILD)/vt-config-ref
	$(BUILD)/vt-config-ref > docs/configuration.md

run: all
	./scripts/sample-data.sh $(BUILD)
	$(BUILD)/vitrine --config examples/datasets.toml

bench: all
	./bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# libFuzzer targets (clang; not part of all/unit/check). `make fuzz` builds
# $(FUZZ_BUILD)/<target> for every tests/fuzz/<target>.c; run one with e.g.
#   mkdir -p build-fuzz/corpus/fuzz_http_range
#   build-fuzz/fuzz_http_range -max_total_time=300 build-fuzz/corpus/fuzz_http_range
# A target links only the modules listed in FUZZ_SRC_<target> (keeps clang and
# the sanitizers away from code the target does not test).
# UBSan's pointer-overflow check is left out: it compares pointers as
# integers, which SanitizerCoverage traces, and libFuzzer then wrote heap
# addresses (which differ from run to run) into its inputs (see fuzz-smoke).
# ASan still catches a pointer that walks out of its object when it is used.
FUZZ_BUILD ?= build-fuzz
FUZZ_CC    ?= clang
FUZZ_FLAGS := -std=c17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
              -fno-sanitize=pointer-overflow \
              -fno-sanitize-recover=undefined $(WARN) -D_GNU_SOURCE -Isrc -isystem $(DUCKDB_DIR) $(BANNED)
FUZZ_SRC_fuzz_http_range       := src/http/range.c
FUZZ_SRC_fuzz_http_accept      := src/http/encoding.c
FUZZ_SRC_fuzz_http_conditional := src/http/conditional.c
FUZZ_SRC_fuzz_http_host        := src/http/hosts.c src/util/strvec.c
FUZZ_SRC_fuzz_http_wire        := src/http/wire.c src/util/strbuf.c src/util/errors.c
FUZZ_SRC_fuzz_http_path        := src/http/router.c src/util/arena.c src/util/errors.c
FUZZ_LIBS_fuzz_http_path       := -isystem $(DUCKDB_DIR)
FUZZ_SRC_fuzz_toml             := $(wildcard src/config/*.c) src/util/strbuf.c src/util/errors.c \
                                  src/util/strvec.c src/util/file.c src/util/timeutil.c
FUZZ_LIBS_fuzz_toml            := -ljansson
# Query compiler; FUZZ_QUERY_DUCKDB=1 also runs each statement in DuckDB.
FUZZ_SRC_fuzz_query            := $(filter-out src/query/query_index.c,$(wildcard src/query/*.c)) \
                                  src/util/arena.c src/util/strbuf.c src/util/errors.c \
                                  src/util/json_small.c
FUZZ_LIBS_fuzz_query           := -isystem $(DUCKDB_DIR) -ljansson -L$(DUCKDB_DIR) -lduckdb \
                                  -Wl,-rpath,$(abspath $(DUCKDB_DIR)) -lm
FUZZ_SRC_fuzz_delta_log        := src/sources/delta_log.c src/sources/delta_schema.c \
                                  src/util/strbuf.c src/util/errors.c
FUZZ_LIBS_fuzz_delta_log       := -ljansson
FUZZ_SRC_fuzz_delta_dv         := src/sources/delta_dv.c src/util/strbuf.c src/util/errors.c
FUZZ_LIBS_fuzz_delta_dv        := -isystem $(DUCKDB_DIR) -lroaring -lz
FUZZ_SRC_fuzz_variant          := src/sources/variant.c src/encode/json_format.c src/encode/dtoa.c \
                                  src/util/strbuf.c src/util/errors.c
FUZZ_CFLAGS_fuzz_variant       := -DVT_NO_OVERREAD
FUZZ_LIBS_fuzz_variant         := -isystem $(DUCKDB_DIR) -L$(DUCKDB_DIR) -lduckdb \
                                  -Wl,-rpath,$(abspath $(DUCKDB_DIR))
# jsonb containment (engine/jsonb.c: what the pgwire dialect makes of @> and <@).
FUZZ_SRC_fuzz_jsonb            := src/engine/jsonb.c src/util/errors.c src/util/strbuf.c
FUZZ_LIBS_fuzz_jsonb           := -isystem $(DUCKDB_DIR) -ljansson -L$(DUCKDB_DIR) -lduckdb \
                                  -Wl,-rpath,$(abspath $(DUCKDB_DIR))
FUZZ_SRC_fuzz_delta_stats      := src/sources/delta_stats.c src/sources/lazy_stats.c
FUZZ_LIBS_fuzz_delta_stats     := -isystem $(DUCKDB_DIR) -ljansson -lm
FUZZ_SRC_fuzz_lazy_stats       := src/sources/lazy_stats.c
FUZZ_LIBS_fuzz_lazy_stats      := -lm
FUZZ_SRC_fuzz_s3_list_xml      := src/sources/s3_xml.c src/util/errors.c
FUZZ_LIBS_fuzz_s3_list_xml     := -lexpat
FUZZ_SRC_fuzz_ui               := src/ui/assets.c src/http/encoding.c
FUZZ_SRC_fuzz_mcp              := src/mcp/envelope.c
FUZZ_LIBS_fuzz_mcp             := -isystem $(DUCKDB_DIR) -ljansson
FUZZ_SRC_fuzz_saved            := src/saved/saved.c $(wildcard src/config/*.c) src/util/strbuf.c \
                                  src/util/errors.c src/util/strvec.c src/util/file.c \
                                  src/util/timeutil.c
FUZZ_LIBS_fuzz_saved           := -ljansson
FUZZ_SRC_fuzz_jwt              := src/auth/jwt.c src/auth/claims.c src/util/strvec.c \
                                  src/util/errors.c
FUZZ_LIBS_fuzz_jwt             := -ljansson -lm
FUZZ_SRC_fuzz_jwks             := src/auth/jwk.c src/auth/jwt.c src/util/errors.c
FUZZ_LIBS_fuzz_jwks            := -ljansson -lcrypto
FUZZ_SRC_fuzz_pgwire           := src/pgwire/proto.c src/pgwire/lexer.c src/pgwire/params.c \
                                  src/encode/json_format.c src/util/arena.c src/util/strbuf.c \
                                  src/util/errors.c
FUZZ_LIBS_fuzz_pgwire          := -isystem $(DUCKDB_DIR)
# The shared storage's manifest and CURRENT (src/cluster/store.c), with
# DuckDB preparing the reader's import SQL around every accepted cast type.
FUZZ_SRC_fuzz_cluster_store    := src/cluster/store.c src/util/strvec.c src/util/errors.c
FUZZ_LIBS_fuzz_cluster_store   := -isystem $(DUCKDB_DIR) -ljansson -L$(DUCKDB_DIR) -lduckdb \
                                  -Wl,-rpath,$(abspath $(DUCKDB_DIR))
# The small-body JSON loader of src/util, with jansson as its oracle.
FUZZ_SRC_fuzz_json_small       := src/util/json_small.c
FUZZ_LIBS_fuzz_json_small      := -ljansson
# The query lookup shape read without a tree (src/query/query_small.c), with
# json_small_load + query_parse as its oracle (tests/fuzz/query_small_check.h).
FUZZ_SRC_fuzz_query_small      := $(FUZZ_SRC_fuzz_query)
FUZZ_LIBS_fuzz_query_small     := $(FUZZ_LIBS_fuzz_query)
# JSON span reader of src/explore, with jansson as its oracle.
FUZZ_SRC_fuzz_explore_jspan    := src/explore/jspan.c
FUZZ_LIBS_fuzz_explore_jspan   := -ljansson
# Every allowlisted SQL function with hostile arguments, composed, through the
# gate and DuckDB, with the wrappers and the allocation budget of src/engine.
FUZZ_SRC_fuzz_sql_functions    := src/engine/functions.c src/engine/pg_dates.c src/engine/jsonb.c src/engine/engine.c \
                                  src/engine/open.c \
                                  src/sql/allowlist.c src/sql/gate.c src/query/query_like.c \
                                  src/util/strbuf.c \
                                  src/util/errors.c src/util/log.c src/util/file.c \
                                  src/util/timeutil.c
FUZZ_DEPS_fuzz_sql_functions   := $(FUZZ_BUILD)/budget.o
FUZZ_LIBS_fuzz_sql_functions   := $(FUZZ_BUILD)/budget.o -isystem $(DUCKDB_DIR) -ljansson \
                                  -L$(DUCKDB_DIR) -lduckdb -Wl,-rpath,$(abspath $(DUCKDB_DIR)) \
                                  -lstdc++ -lm -lpthread
FUZZ_CXX   ?= clang++
$(FUZZ_BUILD)/budget.o: src/engine/budget.cc
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CXX) -std=c++17 -g -O1 -fsanitize=address,undefined -DVT_BUDGET_NO_NEW -c $< -o $@
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))

# The modules are compiled once each into $(FUZZ_BUILD)/obj and shared by
# every target that lists them (errors.c alone is in 15); a target with
# FUZZ_CFLAGS_<target> (a define that changes its modules) compiles its own
# in its one command instead.
FUZZ_OBJ := $(FUZZ_BUILD)/obj
$(FUZZ_OBJ)/%.o: %.c | $(DUCKDB_DIR)/duckdb.h
	@mkdir -p $(dir $@)
	@echo "  FUZZCC $<"
	@$(FUZZ_CC) $(FUZZ_FLAGS) -MMD -MP -c $< -o $@
-include $(shell find $(FUZZ_OBJ) -name '*.d' 2>/dev/null)
fuzz_inputs = $(if $(FUZZ_CFLAGS_$(1)),$(FUZZ_SRC_$(1)),$(FUZZ_SRC_$(1):%.c=$(FUZZ_OBJ)/%.o))
define FUZZ_RULE
$(FUZZ_BUILD)/$(1): tests/fuzz/$(1).c $(call fuzz_inputs,$(1)) $(wildcard $(FUZZ_SRC_$(1):.c=.h)) \
                    $(wildcard tests/fuzz/*.h) $(FUZZ_DEPS_$(1))
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_CFLAGS_$(1)) -o $$@ $$< $(call fuzz_inputs,$(1)) $(FUZZ_LIBS_$(1))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_RULE,$(t))))

fuzz: $(addprefix $(FUZZ_BUILD)/,$(FUZZ_TARGETS))
# TOML parser + config loader: build-fuzz/fuzz_toml -dict=tests/fuzz/toml.dict DIR
.PHONY: fuzz-toml
fuzz-toml: $(FUZZ_BUILD)/fuzz_toml
# Query compiler: build-fuzz/fuzz_query -dict=tests/fuzz/query.dict tests/fuzz/corpus/fuzz_query
.PHONY: fuzz-query
fuzz-query: $(FUZZ_BUILD)/fuzz_query

# CI's fuzz step (.ci/run: `make -j2 fuzz-smoke`), reproducible: every target
# starts from its committed corpus (tests/fuzz/corpus/<target>, copied into a
# scratch corpus so new inputs stay out of the tree) with its dictionary when
# one exists (tests/fuzz/<target minus fuzz_>.dict, or DICT_<target>), the
# fixed seed FUZZ_SEED, and stops after FUZZ_RUNS_<target> inputs (default
# FUZZ_RUNS): libFuzzer's sequence is a function of the binary, the seed, the
# corpus and what each input covers, so the same commit starts fuzzing the
# same inputs here and in CI, and the time a run takes is set by the run
# count. It still explores (new inputs mutated from the corpus). The same
# sequence needs each input to cover the same code and libFuzzer to run the
# same number of inputs, wherever it runs; what broke that, and is now off:
#  - -reload: every second libFuzzer re-reads the corpus directory and runs
#    the files it finds not in its corpus (seeds that added nothing) once
#    more: a count of extra runs set by the clock (fuzz_toml parted after
#    16,639 inputs). -reload=0.
#  - per-input leak checks: an input that mallocs more than it frees is run
#    again, and in the targets with threads (DuckDB's) the count is racy
#    (fuzz_sql_functions parted after 2,470). -detect_leaks=0: LeakSanitizer
#    still checks the whole run at exit and fails it (without the input).
#  - addresses: libFuzzer mutates with the operands of the compares the code
#    made, and UBSan's pointer-overflow check compares heap addresses, which
#    differ run to run even without address-space randomisation (fuzz_toml
#    parted after 75,398: 8 bytes of an address). Not compiled in (FUZZ_FLAGS).
#    Address-space randomisation is off too (setarch -R, when allowed).
#  - the clock and random numbers in SQL: fuzz_sql_functions sees now() and
#    uuidv7() as constants and reseeds random() before each statement.
#  - the environment: -fsanitize=fuzzer on Linux counts the stack's depth as
#    a feature (-fsanitize-coverage=stack-depth), in bytes, and frames that
#    align their locals to 32 bytes (ASan's) are deeper or not by where the
#    stack starts, which the size of the environment and arguments moves:
#    fuzz_delta_dv's seeds had 397 or 399 features, fuzz_variant's 2,745 or
#    2,746, by the length of one variable, and a make run's environment is
#    not another's (nor CI's). The target runs with FUZZ_ENV alone (env -i).
# With these, two full runs of `make -j2 fuzz-smoke` on this machine (16:00,
# load ~8) ran the same inputs, new units and final coverage for fuzz_toml
# (250,000 runs), fuzz_pgwire, fuzz_saved, fuzz_jwt, fuzz_http_wire,
# fuzz_explore_jspan, fuzz_s3_list_xml, fuzz_query_small and fuzz_ui: every
# target that finished its runs in both, except four, fuzz_delta_dv,
# fuzz_variant, fuzz_query and fuzz_sql_functions, which parted by the
# environment (above; each input's hash logged in both runs: equal since,
# with the environments of the two runs apart by 100 bytes). Still apart
# from one machine to another: where setarch -R is not allowed (the stack
# starts at a random place), and fuzz_sql_functions' statements near their
# 2 s deadline, which reach more or less of the wrappers with the
# machine's speed and load. A target
# stopped by FUZZ_SECONDS ("time cap") has not run all of its inputs. A
# failure's input is in the log (libFuzzer prints it as Base64) and in
# build-fuzz/smoke/<target>-crash-*: replay that.
# FUZZ_SECONDS (60) caps each target for a machine much slower than this one
# or a busy one; a target that reaches it says so ("time cap") and has not
# run the same inputs as elsewhere. The run counts are about 15 CPU seconds
# each (make fuzz-rates): 26 targets, two at a time, took 4 min 43 s of wall
# time (340 CPU s) on this machine at a load of 12, every target 9-28 s.
#   make -j2 fuzz-smoke                    # exactly CI's step
#   make -j2 fuzz-smoke FUZZ_SEED=7        # same budget, another sequence
#   make fuzz-smoke-fuzz_query FUZZ_RUNS_fuzz_query=0 FUZZ_SECONDS=600
#                                          # 0 runs: bounded by time only
# Long campaigns (exploration, not reproducible) keep a scratch corpus per
# target in FUZZ_CAMPAIGN_DIR (default /tmp/fz) that grows across runs, then
# fold what they reached back into the committed corpus, minimised:
#   make fuzz-campaign T=fuzz_query FUZZ_SECONDS=900   # FUZZ_QUERY_DUCKDB=1 too
#   make fuzz-merge T=fuzz_query
FUZZ_SECONDS ?= 60
FUZZ_SEED    ?= 1
FUZZ_RUNS    ?= 100000
# Measured with `make fuzz-rates` (15 CPU seconds of each target as
# fuzz-smoke runs it); re-measure when a target or its corpus changes a lot.
FUZZ_RUNS_fuzz_cluster_store    := 450000
FUZZ_RUNS_fuzz_delta_dv         := 60000
FUZZ_RUNS_fuzz_delta_log        := 190000
FUZZ_RUNS_fuzz_delta_stats      := 1100000
FUZZ_RUNS_fuzz_explore_jspan    := 1600000
FUZZ_RUNS_fuzz_http_accept      := 580000
FUZZ_RUNS_fuzz_http_conditional := 1700000
FUZZ_RUNS_fuzz_http_host        := 2600000
FUZZ_RUNS_fuzz_http_path        := 2200000
FUZZ_RUNS_fuzz_http_range       := 2100000
FUZZ_RUNS_fuzz_http_wire        := 500000
FUZZ_RUNS_fuzz_json_small       := 2100000
FUZZ_RUNS_fuzz_jsonb            := 520000
FUZZ_RUNS_fuzz_jwks             := 40000
FUZZ_RUNS_fuzz_jwt              := 400000
FUZZ_RUNS_fuzz_lazy_stats       := 10000000
FUZZ_RUNS_fuzz_mcp              := 2400000
FUZZ_RUNS_fuzz_pgwire           := 220000
FUZZ_RUNS_fuzz_query            := 1000000
FUZZ_RUNS_fuzz_query_small      := 3500000
FUZZ_RUNS_fuzz_s3_list_xml      := 440000
FUZZ_RUNS_fuzz_saved            := 470000
FUZZ_RUNS_fuzz_sql_functions    := 3000
FUZZ_RUNS_fuzz_toml             := 250000
FUZZ_RUNS_fuzz_ui               := 160000
FUZZ_RUNS_fuzz_variant          := 1200000
FUZZ_CAMPAIGN_DIR ?= /tmp/fz
# The whole environment of a fuzz-smoke target (fixed: see above); the
# symbolizer is found on this PATH.
FUZZ_ENV := PATH=/usr/bin:/bin
DICT_fuzz_http_range       := tests/fuzz/http.dict
DICT_fuzz_http_accept      := tests/fuzz/http.dict
DICT_fuzz_http_conditional := tests/fuzz/http.dict
DICT_fuzz_http_host        := tests/fuzz/http.dict
DICT_fuzz_http_wire        := tests/fuzz/wire.dict
DICT_fuzz_delta_log        := tests/fuzz/delta.dict
DICT_fuzz_s3_list_xml      := tests/fuzz/s3.dict
DICT_fuzz_jwks             := tests/fuzz/jwt.dict
# Extra libFuzzer options of a target. fuzz_sql_functions spends several input
# bytes per argument and runs ~100 inputs/s: with libFuzzer's default length
# control its inputs stay at the committed seeds' 10 bytes for minutes (one
# call, no composition), so it mutates up to 64 bytes from the start.
FUZZ_OPTS_fuzz_sql_functions := -max_len=64 -len_control=0
fuzz_dict = $(or $(DICT_$(1)),$(wildcard tests/fuzz/$(patsubst fuzz_%,%,$(1)).dict))
# Targets run side by side under `make -j2 fuzz-smoke` (each is one process).
fuzz-smoke: $(addprefix fuzz-smoke-,$(FUZZ_TARGETS))
fuzz-smoke-%: $(FUZZ_BUILD)/%
	@work=$(FUZZ_BUILD)/smoke/$*; rm -rf $$work; mkdir -p $$work; \
	if [ -d tests/fuzz/corpus/$* ]; then cp tests/fuzz/corpus/$*/* $$work/ 2>/dev/null || true; fi; \
	$(MAKE) --no-print-directory fuzz-run-one T=$* WORK=$$work

# One target: prints its run count, and the whole log when it fails.
fuzz-run-one:
	@runs='$(or $(FUZZ_RUNS_$(T)),$(FUZZ_RUNS))'; d='$(call fuzz_dict,$(T))'; \
	echo "== $(T) (seed $(FUZZ_SEED), $$runs runs, cap $(FUZZ_SECONDS) s)"; \
	norand=; if setarch $$(uname -m) -R true 2>/dev/null; then norand="setarch $$(uname -m) -R"; fi; \
	if env -i $(FUZZ_ENV) $$norand $(FUZZ_BUILD)/$(T) -seed=$(FUZZ_SEED) -runs=$$([ "$$runs" = 0 ] && echo -1 || echo $$runs) -max_total_time=$(FUZZ_SECONDS) \
	       -reload=0 -detect_leaks=0 \
	       -print_final_stats=1 -artifact_prefix=$(WORK)- $(FUZZ_OPTS_$(T)) $${d:+-dict=$$d} $(WORK) > $(WORK).log 2>&1; then \
	    done=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(WORK).log); \
	    echo "$(T): $$done runs in $$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) .*/\1/p' $(WORK).log) s"; \
	    if [ "$$runs" != 0 ] && [ "$$done" -lt "$$runs" ]; then \
	        echo "$(T): time cap of $(FUZZ_SECONDS) s reached before $$runs runs (not reproducible)"; fi; \
	else \
	    cat $(WORK).log; echo "$(T): failed; the input is $(WORK)-crash-* (or leak-, timeout-, oom-)"; \
	    exit 1; \
	fi

# Re-measures the run counts above (one target at a time; FUZZ_RATE_SECONDS
# CPU seconds each, 15): FUZZ_RUNS_<target> lines to paste.
FUZZ_RATE_SECONDS ?= 15
fuzz-rates: $(addprefix $(FUZZ_BUILD)/,$(or $(T),$(FUZZ_TARGETS)))
	@tests/fuzz/rates.sh $(FUZZ_BUILD) $(FUZZ_SEED) $(FUZZ_RATE_SECONDS) \
	    $(foreach t,$(or $(T),$(FUZZ_TARGETS)),'$(t)=$(or $(FUZZ_RUNS_$(t)),$(FUZZ_RUNS)):$(call fuzz_dict,$(t)):$(FUZZ_OPTS_$(t))')

# A long campaign of target T (exploration): FUZZ_SECONDS from a random seed
# over the scratch corpus $(FUZZ_CAMPAIGN_DIR)/T (seeded from the committed one).
fuzz-campaign: $(FUZZ_BUILD)/$(T)
	@mkdir -p $(FUZZ_CAMPAIGN_DIR)/$(T); cp -n tests/fuzz/corpus/$(T)/* $(FUZZ_CAMPAIGN_DIR)/$(T)/ 2>/dev/null; \
	d='$(call fuzz_dict,$(T))'; \
	$(FUZZ_BUILD)/$(T) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_CAMPAIGN_DIR)/$(T)- $(FUZZ_OPTS_$(T)) $${d:+-dict=$$d} $(FUZZ_CAMPAIGN_DIR)/$(T)

# Folds the campaign corpus of T into tests/fuzz/corpus/T: the named seeds
# (crash inputs, one per feature) stay as they are; of the rest (libFuzzer's
# hash-named files, old and new) only those that add coverage to them, the
# smallest first (libFuzzer -merge=1 into a fresh directory).
fuzz-merge: $(FUZZ_BUILD)/$(T)
	@c=tests/fuzz/corpus/$(T); new=$(FUZZ_CAMPAIGN_DIR)/$(T).merged; rm -rf $$new $$new.rest; \
	mkdir -p $$c $$new $$new.rest; \
	for f in $$c/*; do [ -f "$$f" ] || continue; \
	    if basename $$f | grep -qE '^[0-9a-f]{40}$$'; then cp $$f $$new.rest/; else cp $$f $$new/; fi; \
	done; \
	$(FUZZ_BUILD)/$(T) -set_cover_merge=1 $$new $$new.rest $(FUZZ_CAMPAIGN_DIR)/$(T) > $$new.log 2>&1 || { cat $$new.log; exit 1; }; \
	rm -rf $$c; mv $$new $$c; rm -rf $$new.rest; \
	echo "$$c: $$(ls $$c | wc -l) files, $$(du -sk --apparent-size $$c | cut -f1) KiB"
