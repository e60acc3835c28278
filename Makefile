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
DEFS    := -D_GNU_SOURCE -DVT_VERSION='"$(VERSION)"' -DVT_BUILD_TIME='"$(BUILD_TIME)"' \
           -DVT_TARGET='"$(TARGET)"' $(if $(GIT_SHA),-DVT_GIT_SHA='"$(GIT_SHA)"')
OPT     := -O2
ifeq ($(SAN),1)
OPT     := -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -DVT_PROFILE_DEBUG
SANLD   := -fsanitize=address,undefined
endif
CFLAGS  := -std=c17 -g -fno-omit-frame-pointer -pthread $(OPT) $(WARN) $(DEFS) -Isrc -isystem $(DUCKDB_DIR) -MMD -MP
CXXFLAGS:= -std=c++17 -g -fno-omit-frame-pointer -pthread $(OPT) -Wall -Wextra -Werror -Isrc -MMD -MP
RPATH   := -Wl,-rpath,'$$ORIGIN/../third_party/duckdb:$$ORIGIN/../../third_party/duckdb:$$ORIGIN/../../../third_party/duckdb'
LDLIBS  := -L$(DUCKDB_DIR) -lduckdb $(RPATH) -lmicrohttpd -ljansson -lcurl -lz -lbrotlienc -lbrotlidec \
           -lzstd -lexpat -lssl -lcrypto -ldouble-conversion -lstdc++ -lpthread -lm
LDFLAGS := -pthread $(SANLD)

LIB_C    := $(filter-out src/main.c,$(shell find src -name '*.c' | sort))
LIB_CC   := $(shell find src -name '*.cc' | sort)
LIB_OBJ  := $(LIB_C:%.c=$(BUILD)/obj/%.o) $(LIB_CC:%.cc=$(BUILD)/obj/%.o)
UNIT_SRC := $(shell find tests/unit -name 'test_*.c' | sort)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(shell find tools -name '*.c' 2>/dev/null | sort)
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/%)

.PHONY: all deps unit e2e check run bench clean fuzz fuzz-query
all: $(BUILD)/vitrine $(TOOL_BIN)

deps: $(DUCKDB_DIR)/libduckdb.so

$(DUCKDB_DIR)/libduckdb.so $(DUCKDB_DIR)/duckdb.h:
	./scripts/fetch-duckdb.sh

$(BUILD)/obj/%.o: %.c | $(DUCKDB_DIR)/duckdb.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/libvitrine.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/vitrine: $(BUILD)/obj/src/main.o $(BUILD)/libvitrine.a $(DUCKDB_DIR)/libduckdb.so
	$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/src/main.o $(BUILD)/libvitrine.a $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/testlib.h $(BUILD)/libvitrine.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/libvitrine.a $(LDLIBS)

$(BUILD)/%: tools/%.c $(BUILD)/libvitrine.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libvitrine.a $(LDLIBS)

# Unit tests: every tests/unit/**/test_*.c is one binary; each prints "N passed, N failed".
unit: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_BIN); do echo "== $$t"; $$t || fail=1; done; exit $$fail

# Black-box tests: the real binary on 127.0.0.1, driven by pytest and real clients.
e2e: all
	VITRINE_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -x tests/e2e $(PYTEST_ARGS)

check: all unit e2e

run: all
	./scripts/sample-data.sh $(BUILD)
	$(BUILD)/vitrine --config examples/datasets.toml

bench: all
	./bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)

# Fuzz targets: clang libFuzzer + ASan/UBSan, not part of `make check`. Each
# tests/fuzz/fuzz_<name>.c lists the sources it needs in FUZZ_SRC_fuzz_<name>.
# Run e.g.: build-fuzz/fuzz_query -dict=tests/fuzz/query.dict tests/fuzz/corpus/query
FUZZ_BUILD ?= build-fuzz
FUZZ_CC    ?= clang
FUZZ_FLAGS := -std=c17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
              -D_GNU_SOURCE -Isrc -isystem $(DUCKDB_DIR)
FUZZ_SRC_fuzz_query := $(wildcard src/query/*.c) $(wildcard src/util/*.c)

fuzz: fuzz-query
fuzz-query: $(FUZZ_BUILD)/fuzz_query

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard src/*/*.c src/*/*.h) | $(DUCKDB_DIR)/duckdb.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SRC_fuzz_$*) $(LDLIBS)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
