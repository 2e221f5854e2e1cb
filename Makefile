# causeway: one binary, built out of tree in $(BUILD).
#   make            build build/causeway
#   make demo       install missing packages, build, run the incident demo
#   make test       install missing packages, build, run the whole suite
#   make asan       build with ASan/UBSan into build-asan/
#   make release    build/release/causeway-linux-{x86_64,aarch64}: one file each (docs/install.md)
BUILD ?= build
CC ?= cc
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
VERSION := 0.1.0
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

PKGS := sqlite3 jansson libbpf libelf libdw zlib yaml-0.1 libmicrohttpd gnutls libcurl liblzma
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

SANITIZE ?=
OPT ?= -O2
WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 -Wvla
HARDEN := -fstack-protector-strong -fPIE -D_FORTIFY_SOURCE=2
ifneq ($(SANITIZE),)
HARDEN := -fPIE
endif
CFLAGS ?= $(OPT) -g
# Product sources (not tests, benchmarks or fixtures) cannot call the
# functions src/util/banned.h lists: it is force-included into each of them.
BANNED := -include util/banned.h
override CFLAGS += -std=gnu11 $(WARN) $(HARDEN) $(SANITIZE) -Isrc -I$(BUILD)/gen $(PKG_CFLAGS) \
	-DCW_VERSION='"$(VERSION)"' -DCW_COMMIT='"$(COMMIT)"' -MMD -MP
LDFLAGS += -pie -Wl,-z,relro,-z,now $(SANITIZE)
LDLIBS += $(PKG_LIBS) -lpthread -lm -ldl
# C++ demangling (src/symbol/demangle.c) uses __cxa_demangle from libstdc++.
LDLIBS += -lstdc++

# Product sources: everything under src/ except BPF programs and main.c.
LIB_SRCS := $(filter-out src/main.c,$(shell find src -name '*.c' -not -name '*.bpf.c' | sort))
LIB_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
GEN_SRCS := $(BUILD)/gen/schema_sql.c $(BUILD)/gen/web_assets.c $(BUILD)/gen/mcp_schema_md.c \
	$(BUILD)/gen/mcp_rules_md.c
GEN_OBJS := $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(GEN_SRCS))

BPF_SRCS := $(sort $(wildcard src/bpf/*.bpf.c))
# Variants: one source built again with other settings. cuda_sessctx is
# cuda.bpf.c for kernels whose session kfuncs take the context
# (src/bpf/cuda.bpf.c says why it must be a second object); cuda_noloop for
# kernels without bpf_loop (before 5.17: src/bpf/pystack.bpf.h).
BPF_VARIANTS := cuda_sessctx cuda_noloop
BPF_OBJS := $(patsubst src/bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS)) $(BPF_VARIANTS:%=$(BUILD)/bpf/%.bpf.o)
BPF_SKELS := $(patsubst src/bpf/%.bpf.c,$(BUILD)/gen/%.skel.h,$(BPF_SRCS)) $(BPF_VARIANTS:%=$(BUILD)/gen/%.skel.h)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BUILD)/gen -Isrc -Wall -Werror -Wno-unused-function

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
FIXTURE_SRCS := $(sort $(wildcard tests/fixtures/*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))

.PHONY: all deps demo test unit asan fuzz clean bench
all: $(BUILD)/causeway

deps:
	@scripts/install-deps.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@./$(BUILD)/causeway demo --db $(BUILD)/demo.db

ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# The builds run one job per CPU; the aarch64 unit suite under qemu-user
# belongs to the long form (bench/long-suite.sh), not to this one.
NPROC := $(shell nproc 2>/dev/null || echo 1)
test:
	@CW_TEST_DEPS=1 scripts/install-deps.sh
	@scripts/install-mcp-tests.sh || [ $$? = 77 ]
	@scripts/install-browser-tests.sh || [ $$? = 77 ]
	-@scripts/install-test-roots.sh
	-@scripts/install-test-kernels.sh
	@$(MAKE) --no-print-directory -j$(NPROC) all unit fixtures
	@$(MAKE) --no-print-directory -j$(NPROC) release
	@$(MAKE) --no-print-directory -j$(NPROC) BUILD=build-asan OPT=-O1 SANITIZE="$(ASAN_FLAGS)" all unit
	@echo "toolchain: $$($(CC) --version | head -1); $$($(CLANG) --version | head -1); libbpf $$(pkg-config --modversion libbpf); kernel $$(uname -r)"
	@scripts/run-tests.sh $(BUILD) build-asan

$(BUILD)/causeway: $(BUILD)/obj/main.o $(BUILD)/libcauseway.a
	@echo '  LD    $@'
	@$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libcauseway.a: $(LIB_OBJS) $(GEN_OBJS)
	@rm -f $@
	@ar rcs $@ $^

$(BUILD)/obj/%.o: src/%.c | $(BPF_SKELS) $(BUILD)/gen/schema_sql.c
	@mkdir -p $(dir $@)
	@echo '  CC    $<'
	@$(CC) $(CFLAGS) $(BANNED) -c -o $@ $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS) $(BANNED) -Wno-overlength-strings -c -o $@ $<

$(BUILD)/gen/schema_sql.c: src/store/schema.sql scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh cw_schema_v1_sql $< > $@

# The MCP resources causeway://schema and causeway://rules.
$(BUILD)/gen/mcp_schema_md.c: docs/schema.md scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh cw_mcp_schema_md $< > $@

$(BUILD)/gen/mcp_rules_md.c: docs/rules.md scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh cw_mcp_rules_md $< > $@

$(BUILD)/gen/web_assets.c: $(shell find web -type f -not -path 'web/node_modules/*' -not -path 'web/test/*' 2>/dev/null) scripts/embed-web.sh
	@mkdir -p $(dir $@)
	scripts/embed-web.sh web > $@

$(BUILD)/gen/vmlinux.h:
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp
	@mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: src/bpf/%.bpf.c src/bpf/events.h $(wildcard src/bpf/*.bpf.h) $(BUILD)/gen/vmlinux.h
	@mkdir -p $(dir $@)
	@echo '  BPF   $<'
	@$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/cuda_sessctx.bpf.o: src/bpf/cuda.bpf.c src/bpf/events.h $(wildcard src/bpf/*.bpf.h) $(BUILD)/gen/vmlinux.h
	@mkdir -p $(dir $@)
	@echo '  BPF   $< (session kfuncs with a context)'
	@$(CLANG) $(BPF_CFLAGS) -DCW_SESSION_KFUNC_CTX=1 -c $< -o $@

$(BUILD)/bpf/cuda_noloop.bpf.o: src/bpf/cuda.bpf.c src/bpf/events.h $(wildcard src/bpf/*.bpf.h) $(BUILD)/gen/vmlinux.h
	@mkdir -p $(dir $@)
	@echo '  BPF   $< (no bpf_loop)'
	@$(CLANG) $(BPF_CFLAGS) -DCW_NO_BPF_LOOP=1 -c $< -o $@

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o
	@$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@
# Kept: deleted as intermediates, the next make (the fixtures a test asks
# for, the fuzz build's generated sources) would compile the BPF programs
# again and re-link everything after them.
.SECONDARY: $(BPF_OBJS) $(BPF_SKELS)

# causeway with its BPF objects built by another clang (clang-N), for
# tests/integration/test_bpf_compilers.sh: the objects and skeletons in
# $(BUILD)/clang-N, the files that include them compiled again, the rest
# of this build linked as it is.
SKEL_USERS := src/loader/bpf_arch.c src/loader/cuda_maps.c src/loader/kernel_probes.c src/loader/live_discover.c \
	src/loader/uprobe_attach.c src/loader/http_probes.c
$(BUILD)/clang-%/causeway: $(BUILD)/obj/main.o $(BUILD)/libcauseway.a $(SKEL_USERS) $(BPF_SRCS) $(wildcard src/bpf/*.h)
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/clang-$* CLANG=clang-$* \
		$(patsubst $(BUILD)/%,$(BUILD)/clang-$*/%,$(BPF_SKELS))
	@mkdir -p $(BUILD)/clang-$*/obj
	@for f in $(SKEL_USERS); do \
		echo "  CC    $$f (clang-$* BPF)"; \
		$(CC) -I$(BUILD)/clang-$*/gen $(CFLAGS) $(BANNED) -c -o $(BUILD)/clang-$*/obj/$$(basename $$f .c).o $$f || exit 1; \
	done
	@echo '  LD    $@'
	@$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/main.o $(SKEL_USERS:src/loader/%.c=$(BUILD)/clang-$*/obj/%.o) \
		$(BUILD)/libcauseway.a $(LDLIBS)

# Unit tests: cmocka, linked against the product library.
unit: $(UNIT_BINS)
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libcauseway.a
	@mkdir -p $(dir $@)
	@echo '  TEST  $<'
	@$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(BUILD)/libcauseway.a $(LDLIBS) $(shell pkg-config --libs cmocka)

# Test fixtures: stand-in CUDA libraries and workloads, never shipped.
.PHONY: fixtures
fixtures: $(BUILD)/libcauseway.a
	@$(MAKE) --no-print-directory -C tests/fixtures BUILD=$(abspath $(BUILD))/fixtures

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SANITIZE="$(ASAN_FLAGS)" all unit

fuzz:
	@scripts/build-fuzz.sh $(BUILD)

bench: all
	@bench/run-all.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan

# Release files, one per architecture (make release).
include scripts/release.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# Benchmarks (bench/README.md): small programs linked against the product.
BENCH_SRCS := $(sort $(wildcard bench/*_bench.c))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
bench-bins: $(BENCH_BINS)
$(BUILD)/bench/%: bench/%.c $(BUILD)/libcauseway.a
	@mkdir -p $(dir $@)
	@echo '  BENCH $<'
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libcauseway.a $(LDLIBS)
