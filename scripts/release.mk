# Release files (docs/install.md): one executable per architecture with the
# distribution's static archives linked in, needing only glibc (<= 2.34
# symbols) and its loader. Included from the Makefile.
#
#   make release          build/release/causeway-linux-x86_64 and -aarch64
#   make release-x86_64   one of them
#
# Each architecture is an ordinary build in its own directory
# (build/release/<arch>), made by a nested make with CW_RELEASE=<arch>; the
# settings below apply only there.
RELEASE_DIR := build/release
RELEASE_ARCHES := x86_64 aarch64

.PHONY: release $(addprefix release-,$(RELEASE_ARCHES))
release: $(addprefix release-,$(RELEASE_ARCHES))

release-x86_64: CW_REL_ENV :=
release-aarch64: CW_REL_ENV := PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
$(addprefix release-,$(RELEASE_ARCHES)): release-%:
	@$(CW_REL_ENV) $(MAKE) --no-print-directory BUILD=$(RELEASE_DIR)/$* CW_RELEASE=$* $(RELEASE_DIR)/$*/causeway \
		$(patsubst src/bpf/%.bpf.c,$(RELEASE_DIR)/$*/bpf/%.bpf.o,$(BPF_SRCS)) $(BPF_VARIANTS:%=$(RELEASE_DIR)/$*/bpf/%.bpf.o)
	@cp $(RELEASE_DIR)/$*/causeway $(RELEASE_DIR)/causeway-linux-$*.tmp
	@mv $(RELEASE_DIR)/causeway-linux-$*.tmp $(RELEASE_DIR)/causeway-linux-$*
	@echo '  REL   $(RELEASE_DIR)/causeway-linux-$*'

# The unit suite built as the release file is (static archives, the
# architecture's compiler) into build/release/<arch>/tests, with the fake
# NVML fixture its GPU tests load; the aarch64 one runs under qemu-user
# (tests/integration/test_release_aarch64.sh).
.PHONY: $(addprefix release-unit-,$(RELEASE_ARCHES))
release-unit-x86_64: CW_REL_ENV :=
release-unit-aarch64: CW_REL_ENV := PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
$(addprefix release-unit-,$(RELEASE_ARCHES)): release-unit-%:
	@$(CW_REL_ENV) $(MAKE) --no-print-directory BUILD=$(RELEASE_DIR)/$* CW_RELEASE=$* unit
	@$(MAKE) --no-print-directory -C tests/fixtures CC=$(if $(filter $*,$(shell uname -m)),$(CC),$*-linux-gnu-gcc) \
		BUILD=$(abspath $(RELEASE_DIR)/$*)/fixtures $(abspath $(RELEASE_DIR)/$*)/fixtures/fakenvml/libnvidia-ml.so.1

ifneq ($(CW_RELEASE),)
CW_REL_TRIPLE := $(CW_RELEASE)-linux-gnu
CW_REL_LIBDIR := /usr/lib/$(CW_REL_TRIPLE)
ifneq ($(CW_RELEASE),$(shell uname -m))
CC := $(CW_REL_TRIPLE)-gcc
endif
# Static archives, in link order (a library before what it uses). Debian 12
# has none for p11-kit, GSS-API and SASL: src/release/static_stubs.c.
CW_STATIC_LIBS := bpf dw elf bz2 lzma sqlite3 jansson yaml curl nghttp2 rtmp ssh2 psl ssl crypto ldap lber zstd \
	brotlidec brotlicommon microhttpd gnutls hogweed nettle tasn1 idn2 unistring gmp z supc++
override CFLAGS += -DCW_RELEASE_STATIC
# BPF objects per architecture (src/bpf/args.bpf.h). The kernel types come
# from this host's BTF either way: every access to them is a CO-RE
# relocation, resolved against the running kernel's BTF at load time.
ifeq ($(CW_RELEASE),aarch64)
BPF_CFLAGS := $(filter-out -D__TARGET_ARCH_x86,$(BPF_CFLAGS)) -D__TARGET_ARCH_arm64
endif
# Kept for tests/golden/test_bpf_arch.sh, which reads each object's ELF.
.SECONDARY: $(BPF_OBJS)
# libsupc++ (static) for __cxa_demangle: no libstdc++ at run time.
LDLIBS := -Wl,-Bstatic $(addprefix -l,$(CW_STATIC_LIBS)) -Wl,-Bdynamic -lpthread -lm -ldl \
	$(BUILD)/obj/release/static_stubs.o
endif
