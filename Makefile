# Makefile — builds ./agor (static musl), its dependencies (mk/deps.sh), and runs the tests.
# `make` → ./agor;  `make test` → unit + integration tests, on the musl binary and on an ASan/UBSan build.

AGOR_VERSION := 0.1.0
GIT_REV := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
VERSION_STRING := $(AGOR_VERSION)$(if $(GIT_REV),+g$(GIT_REV))

DEPS_MUSL := build/deps/musl
DEPS_GLIBC := build/deps/glibc
DEPS_STAMP_MUSL := $(DEPS_MUSL)/VERSIONS
DEPS_STAMP_GLIBC := $(DEPS_GLIBC)/VERSIONS
WEB_STAMP := build/web/VERSIONS

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wvla -Wpointer-arith -Wstrict-prototypes \
	-Wmissing-prototypes -Wno-missing-field-initializers
COMMON_CFLAGS := -std=gnu11 $(WARNINGS) -D_GNU_SOURCE -I. -Ilib -Iapplets -MMD -MP \
	-fno-strict-aliasing -fstack-protector-strong
LIBS := -lgit2 -lssh2 -lhttp_parser -lmbedtls -lmbedx509 -lmbedcrypto -lz -lsqlite3 -ljansson -lyaml -lpthread

# The product: musl, static, stripped, sections garbage-collected.
MUSL_CC := musl-gcc
MUSL_CFLAGS := $(COMMON_CFLAGS) -Os -ffunction-sections -fdata-sections -isystem $(DEPS_MUSL)/include
MUSL_LDFLAGS := -static -s -Wl,--gc-sections -L$(DEPS_MUSL)/lib
# ./agor is linked by ld.lld (Debian package lld) when it is installed, with the code and data an executor dry run
# touches packed together in the order of mk/hot-symbols.txt: every page a run touches first is a page fault, and a
# dry run then faults 11 times less (test/bench/executor). Without lld, GNU ld links it as before, unordered.
# --no-dynamic-linker: musl-gcc's specs name the musl loader, which only GNU ld drops from a static link.
HOT_SYMBOLS := mk/hot-symbols.txt
LLD_ORDERED := -fuse-ld=lld -Wl,--no-dynamic-linker -Wl,--symbol-ordering-file=$(HOT_SYMBOLS) -Wl,--no-warn-symbol-ordering
AGOR_LDFLAGS := $(MUSL_LDFLAGS) $(if $(shell command -v ld.lld 2>/dev/null),$(LLD_ORDERED))

# The test build: glibc with AddressSanitizer and UndefinedBehaviorSanitizer, and the fault seam (lib/fault.h).
ASAN_CC := gcc
ASAN_CFLAGS := $(COMMON_CFLAGS) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined -isystem $(DEPS_GLIBC)/include -DAGOR_FAULTS
ASAN_LDFLAGS := -fsanitize=address,undefined -L$(DEPS_GLIBC)/lib

# V=1 shows full command lines.
Q := $(if $(V),,@)
say = $(if $(V),,@printf '  %-8s %s\n' $(1) $(2))

LIB_SRCS := $(sort $(wildcard lib/*.c))
APPLET_SRCS := $(sort $(wildcard applets/*.c))
UNIT_SRCS := $(sort $(wildcard test/unit/*.c))
SRCS := main.c $(LIB_SRCS) $(APPLET_SRCS)

# Generated sources (build/gen/*.c): the web terminal's embedded files (lib/web.h), compiled like lib/.
GEN_OBJS_MUSL := build/musl/gen/web_assets.o
GEN_OBJS_ASAN := build/asan/gen/web_assets.o

MUSL_OBJS := $(SRCS:%.c=build/musl/%.o) $(GEN_OBJS_MUSL)
ASAN_OBJS := $(SRCS:%.c=build/asan/%.o) $(GEN_OBJS_ASAN)
MUSL_LIB_OBJS := $(LIB_SRCS:%.c=build/musl/%.o) $(GEN_OBJS_MUSL)
ASAN_LIB_OBJS := $(LIB_SRCS:%.c=build/asan/%.o) $(GEN_OBJS_ASAN)
MUSL_UNIT_OBJS := $(UNIT_SRCS:%.c=build/musl/%.o)
ASAN_UNIT_OBJS := $(UNIT_SRCS:%.c=build/asan/%.o)

.PHONY: all deps deps-musl deps-glibc deps-web test unit integration bench fuzz fuzz-campaign run man completion format clean distclean \
	hot-symbols
.DEFAULT_GOAL := all

all: agor

deps: deps-musl deps-glibc deps-web
deps-musl: $(DEPS_STAMP_MUSL)
deps-glibc: $(DEPS_STAMP_GLIBC)
deps-web: $(WEB_STAMP)

$(DEPS_STAMP_MUSL): mk/deps.sh mk/deps.lock
	mk/deps.sh musl
$(DEPS_STAMP_GLIBC): mk/deps.sh mk/deps.lock
	mk/deps.sh glibc

# The web terminal: xterm.js and its fit addon from the npm tarballs pinned in mk/web.lock (fetched once into
# build/web/src and sha256-checked by mk/web-deps.sh; air-gapped builds put the tarballs there), plus our page in
# web/, embedded by mk/embed.c into build/gen/web_assets.c. URL path, Content-Type, file:
WEB_PAGE_SRCS := web/terminal.html web/terminal.js web/terminal.css
WEB_EMBED := \
	/terminal 'text/html; charset=utf-8' web/terminal.html \
	/assets/terminal.js 'text/javascript; charset=utf-8' web/terminal.js \
	/assets/terminal.css 'text/css; charset=utf-8' web/terminal.css \
	/assets/xterm.mjs 'text/javascript; charset=utf-8' build/web/files/xterm.mjs \
	/assets/xterm.css 'text/css; charset=utf-8' build/web/files/xterm.css \
	/assets/addon-fit.mjs 'text/javascript; charset=utf-8' build/web/files/addon-fit.mjs \
	/assets/xterm.LICENSE.txt 'text/plain; charset=utf-8' build/web/files/xterm.LICENSE \
	/assets/addon-fit.LICENSE.txt 'text/plain; charset=utf-8' build/web/files/addon-fit.LICENSE

$(WEB_STAMP): mk/web-deps.sh mk/web.lock
	mk/web-deps.sh

build/embed: mk/embed.c
	@mkdir -p $(dir $@)
	$(call say,HOSTCC,$<)
	$(Q)gcc -O2 -Wall -Wextra -Werror -o $@ $<

build/gen/web_assets.c: build/embed $(WEB_STAMP) $(WEB_PAGE_SRCS) Makefile
	@mkdir -p $(dir $@)
	$(call say,EMBED,$@)
	$(Q)build/embed $(WEB_EMBED) > $@.tmp && mv $@.tmp $@

build/musl/gen/%.o: build/gen/%.c $(DEPS_STAMP_MUSL)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) -c $< -o $@

build/asan/gen/%.o: build/gen/%.c $(DEPS_STAMP_GLIBC)
	@mkdir -p $(dir $@)
	$(call say,CC-ASAN,$<)
	$(Q)$(ASAN_CC) $(ASAN_CFLAGS) -c $< -o $@

# The version string changes with every commit: only version.o depends on it.
build/version-string: FORCE
	@mkdir -p build
	@echo '$(VERSION_STRING)' | cmp -s - $@ || echo '$(VERSION_STRING)' > $@
FORCE:
build/musl/lib/version.o build/asan/lib/version.o: build/version-string
build/musl/lib/version.o build/asan/lib/version.o: EXTRA_CFLAGS = -DAGOR_VERSION='"$(VERSION_STRING)"'

build/musl/%.o: %.c $(DEPS_STAMP_MUSL)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) $(EXTRA_CFLAGS) -c $< -o $@

build/asan/%.o: %.c $(DEPS_STAMP_GLIBC)
	@mkdir -p $(dir $@)
	$(call say,CC-ASAN,$<)
	$(Q)$(ASAN_CC) $(ASAN_CFLAGS) $(EXTRA_CFLAGS) -c $< -o $@

agor: $(MUSL_OBJS) $(HOT_SYMBOLS)
	$(MUSL_CC) $(AGOR_LDFLAGS) -o $@ $(MUSL_OBJS) $(LIBS)

# `make hot-symbols`: mk/hot-symbols.txt again from an unstripped ./agor's dry runs under valgrind (mk/hot-symbols.sh).
build/musl/agor.unstripped: $(MUSL_OBJS) $(HOT_SYMBOLS)
	$(MUSL_CC) $(filter-out -s,$(AGOR_LDFLAGS)) -o $@ $(MUSL_OBJS) $(LIBS)

hot-symbols: build/musl/agor.unstripped
	mk/hot-symbols.sh $< > $(HOT_SYMBOLS).tmp && mv $(HOT_SYMBOLS).tmp $(HOT_SYMBOLS)

build/asan/agor: $(ASAN_OBJS)
	$(ASAN_CC) $(ASAN_LDFLAGS) -o $@ $(ASAN_OBJS) $(LIBS) -ldl -lm

build/musl/unit-tests: $(MUSL_UNIT_OBJS) $(MUSL_LIB_OBJS)
	$(MUSL_CC) -static -L$(DEPS_MUSL)/lib -o $@ $^ $(LIBS)

build/asan/unit-tests: $(ASAN_UNIT_OBJS) $(ASAN_LIB_OBJS)
	$(ASAN_CC) $(ASAN_LDFLAGS) -o $@ $^ $(LIBS) -ldl -lm

# Benchmark helpers (test/bench/*.c): the musl build, linked against lib/.
build/bench/startup: test/bench/startup.c
	@mkdir -p $(dir $@)
	gcc -O2 -o $@ $<

build/bench/executor_rtt: build/musl/test/bench/executor_rtt.o $(MUSL_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static -L$(DEPS_MUSL)/lib -o $@ $^ $(LIBS)

build/bench/sandbox_rtt: build/musl/test/bench/sandbox_rtt.o $(MUSL_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static -L$(DEPS_MUSL)/lib -o $@ $^ $(LIBS)

# The executor's floor: a static no-op speaking the executor's protocol (no libc start-up beyond musl's).
build/bench/noop_executor: test/bench/noop_executor.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static -O2 -s -o $@ $<

# The kernel's floor under it: the same namespaces and a minimal root, none of lib/sandbox's controls.
build/bench/sandbox_floor: build/musl/test/bench/sandbox_floor.o
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static -o $@ $^

# The same helper with lib/sandbox.c's stage stamps compiled in (-DSANDBOX_TIMING): per-stage µs, never in ./agor.
build/timing/%.o: %.c $(DEPS_STAMP_MUSL)
	@mkdir -p $(dir $@)
	$(call say,CC,$< [timing])
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) -DSANDBOX_TIMING -c $< -o $@

build/bench/sandbox_stages: build/timing/test/bench/sandbox_rtt.o build/timing/lib/sandbox.o \
		$(filter-out build/musl/lib/sandbox.o,$(MUSL_LIB_OBJS))
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static -L$(DEPS_MUSL)/lib -o $@ $^ $(LIBS)

build/bench/tmux_parse: build/musl/test/bench/tmux_parse.o $(MUSL_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static -L$(DEPS_MUSL)/lib -o $@ $^ $(LIBS)

# Network test server (test/helpers/net_echo.c) for t0020-net, in both flavors. It links only the modules the
# message server needs (lib/net and what it uses), so a half-written unrelated module never breaks it.
NET_HELPER_LIB := net addrcount fdpass http ws ndjson tls loop strbuf err xalloc log json fsutil fault strvec openat2
build/musl/net-echo: build/musl/test/helpers/net_echo.o $(NET_HELPER_LIB:%=build/musl/lib/%.o)
	$(MUSL_CC) $(MUSL_LDFLAGS) -o $@ $^ $(LIBS)

build/asan/net-echo: build/asan/test/helpers/net_echo.o $(NET_HELPER_LIB:%=build/asan/lib/%.o)
	$(ASAN_CC) $(ASAN_LDFLAGS) -o $@ $^ $(LIBS) -ldl -lm

# Runs a command with one system call failing (t0050-sandbox: kernels without Landlock or user namespaces).
build/deny-syscall: test/helpers/deny_syscall.c
	@mkdir -p $(dir $@)
	gcc -O2 -Wall -Werror -o $@ $<

# Swaps a directory and a symlink in a tight loop (t0053-executor-races).
build/race-swap: test/helpers/race_swap.c
	@mkdir -p $(dir $@)
	gcc -O2 -Wall -Werror -o $@ $<

TEST_HELPERS := build/musl/net-echo build/asan/net-echo build/deny-syscall build/race-swap

# Fuzz targets (test/fuzz/*.c, libFuzzer; ASan + UBSan; clang, Debian package clang). lib/ is built once more with
# clang into build/fuzz/libagor.a; each target links what it needs. test/integration/t0090-fuzz.sh runs every
# target for a bounded time in `make test` (FUZZ_SECONDS, default 12); `make fuzz-campaign` runs each to 10 million
# executions (FUZZ_RUNS) or FUZZ_CAMPAIGN_SECONDS (default 3600), whichever comes first, and prints executions. Corpora grow in build/fuzz/corpus-*,
# seeds are test/fuzz/seeds/TARGET; a crash input is left in build/fuzz/ and becomes a regression seed.
FUZZ_CC := clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=gnu11 $(WARNINGS) -Wno-format-nonliteral -Wno-string-concatenation -g -O1 -D_GNU_SOURCE -I. -Ilib -isystem $(DEPS_GLIBC)/include \
	$(FUZZ_SAN) -MMD -MP # headers are dependencies: a changed struct rebuilds every object that uses it
FUZZ_LIB_OBJS := $(patsubst lib/%.c,build/fuzz/lib/%.o,$(wildcard lib/*.c))
FUZZ_NAMES := $(basename $(notdir $(wildcard test/fuzz/*_fuzz.c)))   # every target: none can be left out
FUZZ_TARGETS := $(addprefix build/fuzz/,$(FUZZ_NAMES))
FUZZ_LIBS := -L$(DEPS_GLIBC)/lib -Wl,--start-group build/fuzz/libagor.a -lgit2 -lssh2 -lhttp_parser -lmbedtls -lmbedx509 -lmbedcrypto -lz -lsqlite3 \
	-ljansson -lyaml -Wl,--end-group -lpthread -ldl -lm
fuzz: $(FUZZ_TARGETS)
fuzz-campaign: $(FUZZ_TARGETS)
	FUZZ_SECONDS=$${FUZZ_CAMPAIGN_SECONDS:-3600} FUZZ_RUNS=$${FUZZ_RUNS:-10000000} test/fuzz/run $(FUZZ_NAMES)
build/fuzz/lib/%.o: lib/%.c $(DEPS_STAMP_GLIBC)
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz needs clang with libFuzzer (apt-get install clang)"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,CC,$< [fuzz])
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build/fuzz/libagor.a: $(FUZZ_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^
build/fuzz/%: test/fuzz/%.c build/fuzz/libagor.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIBS)  # lib/zalloc.c gives zlib its allocator

# `make test`: every test, on both builds; the last line is "N passed, N failed[, N skipped]".
test: agor build/asan/agor build/musl/unit-tests build/asan/unit-tests $(TEST_HELPERS)
	mk/check-sources.sh
	test/run

unit: agor build/asan/agor build/musl/unit-tests build/asan/unit-tests
	test/run --unit-only

integration: agor build/asan/agor $(TEST_HELPERS)
	test/run --integration-only

bench: agor
	test/bench/run

# `make run`: build, then start the daemon on its embedded defaults (AGOR_HOME ~/.agor, port 3030).
run: agor
	./agor daemon --foreground

# `make man`: dist/man/*.1 from the binary's own usage texts, and dist/completion/ (bash, zsh) from its command
# tables (t0003-docs fails when either drifts apart from the binary).
man: agor completion
	rm -rf dist/man && mk/man.sh ./agor dist/man

completion: agor
	mkdir -p dist/completion
	./agor completion bash > dist/completion/agor.bash
	./agor completion zsh > dist/completion/_agor

# `make format`: every tracked C file in the house style (.clang-format); t0007-format fails when one is not.
format:
	git ls-files -z '*.c' '*.h' | xargs -0 clang-format -i

clean:
	rm -rf build/musl build/asan build/fuzz build/test-tmp build/version-string build/gen build/embed agor

distclean:
	rm -rf build agor

-include $(MUSL_OBJS:.o=.d) $(ASAN_OBJS:.o=.d) $(MUSL_UNIT_OBJS:.o=.d) $(ASAN_UNIT_OBJS:.o=.d) \
	$(wildcard build/musl/test/helpers/*.d build/asan/test/helpers/*.d) $(wildcard build/timing/lib/*.d build/timing/test/bench/*.d build/musl/test/bench/*.d) \
	$(wildcard build/fuzz/lib/*.d build/fuzz/*.d)
