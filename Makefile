# airlock — plain Makefile.  `make` builds, `make check` runs every test,
# `make demo` shows it working, `make bench` compares against peers.
# Sources are discovered by directory: drop a .c file in the right place and
# it is built.  SAN=1 builds with ASan+UBSan into build-san/.

CC      ?= cc
SAN     ?= 0
ifeq ($(SAN),1)
BUILD   ?= build-san
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD   ?= build
SANFLAGS =
endif

PKGS      = jansson libseccomp libcap sqlite3 nettle libcrypto libmicrohttpd libcurl libzip libpq
CORE_PKGS = jansson libseccomp libcap sqlite3 nettle
# The runner service's module (libmicrohttpd; nettle for a constant-time
# compare; libzip for Judge0's additional_files, opened only when one
# comes) and the remote
# provider's (libcurl, OpenSSL) are separate, so a
# daemon without a remote provider never maps libcurl and its ~20
# dependencies (idle RSS).
# The fleet store (docs/scale-out.md) lives in the network module too,
# and opens libpq itself (dlopen) only for a postgresql:// store: neither
# `airlock run` nor a daemon without a fleet maps it.
NET_PKGS  = jansson nettle libmicrohttpd
# libcurl's headers only: the HTTP clients load it when they first need
# it (src/providers/curl_lib.h), so neither an embedder of libairlock nor
# the remote module maps it and its ~30 dependencies for nothing.
# libcrypto is linked only into the SHA-256 test, as its reference.
REMOTE_PKGS = jansson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(filter-out libcurl libcrypto,$(PKGS)) 2>/dev/null)
CORE_LIBS  := $(shell pkg-config --libs $(CORE_PKGS) 2>/dev/null) -lpthread -ldl
# libwslay (WebSocket framing, /api/v2/connect and /v1/connect) ships no
# pkg-config file.
NET_LIBS   := $(shell pkg-config --libs $(NET_PKGS) 2>/dev/null) -lwslay -lpthread
REMOTE_LIBS := $(shell pkg-config --libs $(REMOTE_PKGS) 2>/dev/null) -lpthread
# The CLI links the core libraries statically when their archives are
# installed: each CLI process then loads and relocates five fewer shared
# objects, and each fork of it (the sandbox's init) copies fewer mappings
# (docs/performance.md).  Shared otherwise.
CORE_LIBDIR := $(shell pkg-config --variable=libdir jansson 2>/dev/null)
CORE_ARCHIVES := $(foreach l,jansson seccomp cap sqlite3 nettle,$(CORE_LIBDIR)/lib$(l).a)
ifeq ($(words $(wildcard $(CORE_ARCHIVES))),5)
CLI_LIBS := -Wl,-Bstatic $(shell pkg-config --libs $(CORE_PKGS) 2>/dev/null) -Wl,-Bdynamic -lm -lpthread -ldl
else
CLI_LIBS := $(CORE_LIBS)
endif

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wformat=2 \
           -Wno-missing-field-initializers -fPIC -Iinclude -Isrc $(PKG_CFLAGS) $(SANFLAGS)
ifeq ($(AL_TEST_BUILD),1)
CFLAGS  += -DAL_TEST_BUILD=1
endif
# Every symbol bound at start-up, the GOT read-only after (full RELRO):
# lazy binding resolved symbols in each process a run starts, the
# sandbox's init among them, each resolution saving the vector registers
# (docs/performance.md, "Symbols bound at start-up").
LDFLAGS += -Wl,-z,now -Wl,-z,relro $(SANFLAGS)
LDLIBS  += $(PKG_LIBS) -lwslay -lpthread

LIB_DIRS = src/core src/json src/bundle src/cgroup src/child src/lang src/providers src/sandbox src/container src/host src/supervisor src/server src/store
LIB_SRC  = $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(SBINIT_BLOB)
# The network parts: in libairlock for embedders, but the CLI loads them
# from libairlock-net.so only when a command needs them (fast start-up).
SERVER_SRC = $(wildcard src/server/*.c) $(wildcard src/store/*.c) \
             src/providers/curl_lib.c
REMOTE_SRC = src/providers/remote.c src/supervisor/webhook.c src/container/docker.c \
             src/providers/curl_lib.c
NET_SRC  = $(SERVER_SRC) $(REMOTE_SRC)
NET_OBJ  = $(NET_SRC:%.c=$(BUILD)/obj/%.o)
# Each module calls the binary only through the table in
# src/netmod/host_api.h; its link refuses any other reference (-z defs)
# and its version script exports only its entries.
NETMOD_API = $(BUILD)/obj-netmod/src/netmod/host_api.o
NETMOD_OBJ = $(SERVER_SRC:%.c=$(BUILD)/obj-netmod/%.o) $(NETMOD_API)
REMOTEMOD_OBJ = $(REMOTE_SRC:%.c=$(BUILD)/obj-netmod/%.o) $(NETMOD_API)
NETMOD_LDFLAGS = -Wl,-z,defs -Wl,--version-script,src/netmod/modules.map
CORE_OBJ = $(filter-out $(NET_OBJ),$(LIB_OBJ))
KIT_SRC  = $(wildcard src/kit/*.c)
KIT_OBJ  = $(KIT_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC  = $(wildcard src/cli/*.c)
CLI_OBJ  = $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
EX_SRC   = $(wildcard examples/provider/*.c)
EX_BIN   = $(if $(EX_SRC),$(BUILD)/example-provider-kit)
# The example as a provider module (docs/writing-a-provider.md), and the
# test modules built from tests/modules/ around it.
EX_MOD_OBJ = $(filter-out %/main.o,$(EX_SRC:%.c=$(BUILD)/obj/%.o))
EX_MOD   = $(if $(EX_SRC),$(BUILD)/modules/example-local.so)
TESTMOD_SRC = $(wildcard tests/modules/*.c)
TESTMOD  = $(TESTMOD_SRC:tests/modules/%.c=$(BUILD)/test-modules/%.so)
MOD_LIBS := $(shell pkg-config --libs jansson 2>/dev/null) -lpthread

# The shared library's ABI: SONAME libairlock.so.MAJOR, MAJOR taken from
# AIRLOCK_VERSION in the public header.  It exports only the functions the
# public headers declare (the version script is generated from them, so a
# new public function is exported without a second list to keep).
VERSION := $(shell sed -n 's/^\#define AIRLOCK_VERSION "\(.*\)"/\1/p' include/airlock/airlock.h)
ABI     := $(firstword $(subst ., ,$(VERSION)))
SONAME   = libairlock.so.$(ABI)
LIBMAP   = $(BUILD)/libairlock.map

LIBA  = $(BUILD)/libairlock.a
LIBSO = $(BUILD)/libairlock.so
KITA  = $(BUILD)/libairlock-contract.a
CLI   = $(BUILD)/airlock
NETSO = $(BUILD)/libairlock-net.so
REMOTESO = $(BUILD)/libairlock-remote.so
# The toolbelt command a run calls (docs/toolbelt.md): static, so it runs
# in any sandbox root; alone in its directory, which runs see read-only.
TOOL     = $(BUILD)/toolbelt/airlock-tool

# pid 1 of the container provider's containers (src/ctinit/main.c):
# static, so it runs inside any image.
CTINIT   = $(BUILD)/airlock-init

# pid 1 of a sandbox run once its setup is done (src/sbinit/main.c):
# embedded in libairlock (src/sandbox/init_image.S) and executed from a
# memfd.  Static and small: each run executes it, and musl's start-up
# costs a third of glibc's static one (docs/performance.md, "The init in
# its caller's memory"); glibc's when musl-gcc is missing.
SBINIT      = $(BUILD)/airlock-sandbox-init
SBINIT_BLOB = $(BUILD)/obj/src/sandbox/init_image_blob.o
SBINIT_CC  := $(shell command -v musl-gcc 2>/dev/null || echo $(CC))
SBINIT_CFLAGS = -std=c17 -D_GNU_SOURCE -Os -Wall -Wextra -Werror -Wshadow \
                -Iinclude -Isrc

.PHONY: all deps check check-fast unit unit-san integration integration-unprivileged valgrind contract lint demo bench clean
all: $(LIBA) $(LIBSO) $(KITA) $(CLI) $(NETSO) $(REMOTESO) $(TOOL) $(CTINIT) $(UNIT_BIN) \
     $(EX_BIN) $(EX_MOD) $(TESTMOD)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^
$(LIBSO): $(LIB_OBJ) $(LIBMAP)
	@echo "  LD      $@"
	@$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) -Wl,--version-script,$(LIBMAP) \
		-o $@ $(LIB_OBJ) $(LDLIBS)
$(KITA): $(KIT_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^ && ranlib $@
# The CLI exports the public API (for provider modules,
# docs/writing-a-provider.md) and its jansson, nothing else: the network
# modules get what they call through src/netmod/host_api.h, and their
# jansson references bind to the binary's copy, so a json_t handed across
# is hashed with one seed (two copies would not find each other's keys).
CLI_DYNLIST = $(BUILD)/airlock.dynlist
$(CLI_DYNLIST): $(LIBMAP)
	@echo "  GEN     $@"
	@{ echo '{'; sed -n '/global:/,/local:/{/^ *al_[a-z0-9_]*;$$/p}' $<; \
	   echo '  json_*;'; echo '};'; } > $@.tmp && mv $@.tmp $@
$(CLI): $(CLI_OBJ) $(KITA) $(CORE_OBJ) $(CLI_DYNLIST)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -Wl,--dynamic-list,$(CLI_DYNLIST) -o $@ $(CLI_OBJ) $(KITA) $(CORE_OBJ) $(CLI_LIBS)
$(TOOL): src/tool/airlock_tool.c src/tool/proto.h
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (static)"
	@$(CC) $(filter-out $(SANFLAGS),$(CFLAGS)) -static -o $@ $< -Wl,-Bstatic -ljansson
# Never instrumented: it runs inside images that have no sanitizer runtime.
CTINIT_OBJ = $(addprefix $(BUILD)/obj-init/,src/ctinit/main.o src/child/shepherd.o src/core/error.o src/core/util.o)
$(BUILD)/obj-init/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (airlock-init)"
	@$(CC) $(filter-out $(SANFLAGS),$(CFLAGS)) -MMD -MP -c $< -o $@
$(CTINIT): $(CTINIT_OBJ)
	@echo "  LD      $@"
	@$(CC) -static -o $@ $^
SBINIT_OBJ = $(addprefix $(BUILD)/obj-sbinit/,src/sbinit/main.o src/sandbox/member_go.o src/child/shepherd.o src/core/error.o src/core/util.o)
$(BUILD)/obj-sbinit/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (airlock-sandbox-init)"
	@$(SBINIT_CC) $(SBINIT_CFLAGS) -MMD -MP -c $< -o $@
$(SBINIT): $(SBINIT_OBJ)
	@echo "  LD      $@ (static)"
	@$(SBINIT_CC) -static -Wl,--gc-sections -s -o $@ $^
$(SBINIT_BLOB): src/sandbox/init_image.S $(SBINIT)
	@mkdir -p $(dir $@)
	@echo "  AS      $<"
	@$(CC) -c -DAL_SBINIT_PATH='"$(SBINIT)"' $< -o $@
$(BUILD)/obj-netmod/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (network module)"
	@$(CC) $(CFLAGS) -DAL_NET_MODULE=1 -MMD -MP -c $< -o $@
$(NETSO): $(NETMOD_OBJ) src/netmod/modules.map
	@echo "  LD      $@"
	@$(CC) -shared $(LDFLAGS) $(NETMOD_LDFLAGS) -o $@ $(NETMOD_OBJ) $(NET_LIBS)
$(REMOTESO): $(REMOTEMOD_OBJ) src/netmod/modules.map
	@echo "  LD      $@"
	@$(CC) -shared $(LDFLAGS) $(NETMOD_LDFLAGS) -o $@ $(REMOTEMOD_OBJ) $(REMOTE_LIBS)
# The web console's files (ui/) compiled into the server (src/server/ui.c),
# so the daemon serves /ui with nothing more to install (docs/console.md).
UI_FILES = $(sort $(wildcard ui/*))
UI_INC   = $(BUILD)/gen/ui_assets.inc
$(UI_INC): $(UI_FILES) scripts/embed-ui.sh
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@scripts/embed-ui.sh $@ $(UI_FILES)
$(BUILD)/obj/src/server/ui.o $(BUILD)/obj-netmod/src/server/ui.o: $(UI_INC)
$(BUILD)/obj/src/server/ui.o $(BUILD)/obj-netmod/src/server/ui.o: CFLAGS += -I$(BUILD)/gen
# The store's schema migrations compiled into src/store/store_pg.c.
SQL_FILES = $(sort $(wildcard src/store/migrations/*.sql))
SQL_INC   = $(BUILD)/gen/store_migrations.inc
$(SQL_INC): $(SQL_FILES) scripts/embed-sql.sh
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@scripts/embed-sql.sh $@ $(SQL_FILES)
$(BUILD)/obj/src/store/store_pg.o $(BUILD)/obj-netmod/src/store/store_pg.o: $(SQL_INC)
$(BUILD)/obj/src/store/store_pg.o $(BUILD)/obj-netmod/src/store/store_pg.o: CFLAGS += -I$(BUILD)/gen
# The SQLite store's own migrations, into src/store/store_sqlite.c.
SQLITE_SQL_FILES = $(sort $(wildcard src/store/migrations/sqlite/*.sql))
SQLITE_SQL_INC   = $(BUILD)/gen/store_sqlite_migrations.inc
$(SQLITE_SQL_INC): $(SQLITE_SQL_FILES) scripts/embed-sql.sh
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@scripts/embed-sql.sh $@ $(SQLITE_SQL_FILES)
$(BUILD)/obj/src/store/store_sqlite.o $(BUILD)/obj-netmod/src/store/store_sqlite.o: $(SQLITE_SQL_INC)
$(BUILD)/obj/src/store/store_sqlite.o $(BUILD)/obj-netmod/src/store/store_sqlite.o: CFLAGS += -I$(BUILD)/gen
$(BUILD)/tests/test_sha256: LDLIBS += $(shell pkg-config --libs libcrypto 2>/dev/null)
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(KITA) $(LIBA)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $< $(KITA) $(LIBA) $(LDLIBS) -lcmocka
$(BUILD)/example-provider-kit: $(EX_SRC:%.c=$(BUILD)/obj/%.o) $(KITA) $(LIBA)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(KITA) $(LIBA) $(LDLIBS)
# A module links only its own libraries: its al_ references resolve
# against the host that loads it (include/airlock/provider.h).
$(EX_MOD): $(EX_MOD_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (provider module)"
	@$(CC) -shared $(LDFLAGS) -o $@ $^ $(MOD_LIBS)
$(BUILD)/test-modules/%.so: $(BUILD)/obj/tests/modules/%.o $(BUILD)/obj/examples/provider/example_provider.o
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (test module)"
	@$(CC) -shared $(LDFLAGS) -o $@ $^ $(MOD_LIBS)

deps:
	@scripts/install-deps.sh

# Every test: unit tests (plain, then ASan+UBSan, then valgrind), the
# integration suite against the CLI, the conformance kit, both again
# against the ASan+UBSan build, the fuzz targets briefly, lint; each stage
# timed, JOBS at a time where they can be.  See docs/testing.md.
check: deps
	@scripts/check.sh

# The fast loop: parallel build, unit and integration tests in parallel,
# nothing else (docs/testing.md, "The fast loop").
check-fast:
	@scripts/check-fast.sh

unit: all
	@scripts/run-unit.sh $(BUILD)

valgrind: all
	@scripts/run-valgrind.sh $(BUILD)

integration: all
	AIRLOCK_BIN=$(abspath $(CLI)) /usr/bin/python3 -m pytest -q tests/integration

# The sandbox tests once more as an unprivileged user (created when
# missing): own uid, no delegated cgroup (docs/testing.md).
integration-unprivileged: all
	@scripts/run-unprivileged.sh $(abspath $(CLI))

# The conformance kit against every built-in provider (remote through a
# real airlockd on loopback) and the example third-party provider.
contract: all
	@scripts/contract-all.sh $(abspath $(CLI)) $(abspath $(EX_BIN))

lint:
	@scripts/lint.sh

demo: deps
	$(MAKE) all
	@scripts/demo.sh $(abspath $(CLI))

bench: deps
	$(MAKE) all
	@bench/run.sh $(abspath $(CLI))

# ---- sanitizers beyond unit tests (docs/testing.md) -------------------
# The integration suite and the conformance kit against the ASan+UBSan
# build (build-san/), the fault tests against an ASan+UBSan AL_TEST_BUILD
# (build-san-test/).
integration-san:
	$(MAKE) SAN=1 all
	$(MAKE) SAN=1 BUILD=build-san-test AL_TEST_BUILD=1 \
		build-san-test/airlock build-san-test/libairlock-net.so
	@scripts/integration-san.sh build-san build-san-test
.PHONY: integration-san

# ---- soak (docs/testing.md, "Soak"; not part of `make check`) ---------
# SOAK_RUNS requests from 2 clients to a real airlockd; the report goes to
# bench/results/soak-DATE.md.
SOAK_RUNS ?= 10000
soak: all
	/usr/bin/python3 bench/soak.py --bin $(abspath $(CLI)) --runs $(SOAK_RUNS) \
		--out bench/results/soak-$$(date -u +%Y-%m-%d).md
.PHONY: soak

# ---- fuzzing (docs/testing.md, "Fuzzing") -----------------------------
# libFuzzer targets tests/fuzz/fuzz_*.c, built with clang, ASan and UBSan
# against an instrumented libairlock.a in build-fuzz/.  `make fuzz` runs
# each for FUZZ_SECONDS; `make fuzz-check` (in `make check`) for
# FUZZ_CHECK_SECONDS each, starting from the seed corpora.
FUZZ_CC       ?= clang
FUZZ_BUILD    ?= build-fuzz
FUZZ_SECONDS  ?= 60
FUZZ_CHECK_SECONDS ?= 15
# clang warns about `"text" + n` where gcc does not; only the fuzz build
# uses clang.
FUZZ_SANFLAGS = -fsanitize=fuzzer-no-link,address,undefined \
                -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
                -Wno-string-plus-int
FUZZ_SRC      = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN      = $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: fuzz fuzz-check fuzz-build fuzz-targets
fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) SAN=1 \
		SANFLAGS="$(FUZZ_SANFLAGS)" fuzz-targets
fuzz-targets: $(FUZZ_BIN)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(wildcard tests/fuzz/*.h) $(LIBA)
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIBA) $(LDLIBS)

fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) keep
fuzz-check: fuzz-build
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_CHECK_SECONDS)

# ---- install (docs/install.md) --------------------------------------------
# GNU-style directories; every one can be overridden, DESTDIR stages the
# whole tree elsewhere (packaging, the install test).  SYSCONFDIR is /etc
# whatever the prefix: the CLI reads /etc/airlock/config.json.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
SYSCONFDIR ?= /etc
MODULEDIR  ?= $(LIBDIR)/airlock
UNITDIR    ?= $(PREFIX)/lib/systemd/system
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR  ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR   ?= $(DATADIR)/zsh/site-functions
INSTALL    ?= install
SCDOC      ?= scdoc

MAN_SRC = $(wildcard man/*.scd)
MAN_OUT = $(MAN_SRC:man/%.scd=$(BUILD)/man/%)
DIST_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
	-e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@MODULEDIR@|$(MODULEDIR)|g' \
	-e 's|@VERSION@|$(VERSION)|g'

.PHONY: install uninstall man FORCE
FORCE:

# The installed CLI finds its modules in MODULEDIR when they are not beside
# it.  The directory is compiled in; the stamp changes (and the object is
# rebuilt) only when the directory does.
$(BUILD)/obj/src/cli/net_module.o: CFLAGS += -DAL_MODULE_DIR='"$(MODULEDIR)"'
$(BUILD)/obj/src/cli/net_module.o: $(BUILD)/module-dir
$(BUILD)/obj/src/supervisor/toolbelt.o: CFLAGS += -DAL_MODULE_DIR='"$(MODULEDIR)"'
$(BUILD)/obj/src/supervisor/toolbelt.o: $(BUILD)/module-dir
$(BUILD)/obj/src/container/config.o: CFLAGS += -DAL_MODULE_DIR='"$(MODULEDIR)"'
$(BUILD)/obj/src/container/config.o: $(BUILD)/module-dir
$(BUILD)/module-dir: FORCE
	@mkdir -p $(dir $@)
	@echo '$(MODULEDIR)' | cmp -s - $@ 2>/dev/null || echo '$(MODULEDIR)' > $@

$(LIBMAP): include/airlock/*.h dist/gen-libairlock-map.sh
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@CC="$(CC)" dist/gen-libairlock-map.sh $(ABI) include/airlock/*.h > $@.tmp && mv $@.tmp $@

man: $(MAN_OUT)
$(BUILD)/man/%: man/%.scd
	@mkdir -p $(dir $@)
	@echo "  SCDOC   $<"
	@$(SCDOC) < $< > $@.tmp && mv $@.tmp $@

$(BUILD)/dist/%: dist/%.in FORCE
	@mkdir -p $(dir $@)
	@$(DIST_SUBST) $< > $@.tmp && mv $@.tmp $@

install: $(LIBA) $(LIBSO) $(KITA) $(CLI) $(NETSO) $(REMOTESO) $(TOOL) $(CTINIT) $(MAN_OUT) \
	 $(BUILD)/dist/airlock.pc $(BUILD)/dist/airlockd.service
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(MODULEDIR) \
		$(DESTDIR)$(INCLUDEDIR)/airlock $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	$(INSTALL) -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/airlock
	$(INSTALL) -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/airlock
	$(INSTALL) -m 0644 $(NETSO) $(REMOTESO) $(DESTDIR)$(MODULEDIR)/
	$(INSTALL) -d -m 0755 $(DESTDIR)$(MODULEDIR)/toolbelt
	$(INSTALL) -m 0755 $(TOOL) $(DESTDIR)$(MODULEDIR)/toolbelt/airlock-tool
	$(INSTALL) -m 0755 $(CTINIT) $(DESTDIR)$(MODULEDIR)/
	$(INSTALL) -m 0644 $(LIBSO) $(DESTDIR)$(LIBDIR)/libairlock.so.$(VERSION)
	ln -sf libairlock.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libairlock.so
	$(INSTALL) -m 0644 $(LIBA) $(KITA) $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 0644 include/airlock/*.h $(DESTDIR)$(INCLUDEDIR)/airlock/
	$(INSTALL) -m 0644 $(BUILD)/dist/airlock.pc $(DESTDIR)$(PKGCONFIGDIR)/
	$(INSTALL) -m 0644 $(BUILD)/dist/airlockd.service $(DESTDIR)$(UNITDIR)/
	@# An operator's edited configuration is never replaced.
	[ -e $(DESTDIR)$(SYSCONFDIR)/airlock/config.json ] || \
		$(INSTALL) -m 0644 dist/config.json $(DESTDIR)$(SYSCONFDIR)/airlock/config.json
	$(INSTALL) -m 0644 $(filter %.1,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 $(filter %.5,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man5/
	$(INSTALL) -m 0644 $(filter %.8,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 0644 completion/airlock.bash $(DESTDIR)$(BASHCOMPDIR)/airlock
	$(INSTALL) -m 0644 completion/_airlock $(DESTDIR)$(ZSHCOMPDIR)/_airlock

# Leaves /etc/airlock (the operator's configuration) and the state alone.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/airlock $(DESTDIR)$(MODULEDIR)/libairlock-net.so \
		$(DESTDIR)$(MODULEDIR)/libairlock-remote.so $(DESTDIR)$(MODULEDIR)/airlock-init \
		$(DESTDIR)$(LIBDIR)/libairlock.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libairlock.so $(DESTDIR)$(LIBDIR)/libairlock.a \
		$(DESTDIR)$(LIBDIR)/libairlock-contract.a \
		$(DESTDIR)$(PKGCONFIGDIR)/airlock.pc $(DESTDIR)$(UNITDIR)/airlockd.service \
		$(DESTDIR)$(BASHCOMPDIR)/airlock $(DESTDIR)$(ZSHCOMPDIR)/_airlock
	for f in $(notdir $(MAN_OUT)); do rm -f $(DESTDIR)$(MANDIR)/man$${f##*.}/$$f; done
	rm -rf $(DESTDIR)$(INCLUDEDIR)/airlock
	rm -f $(DESTDIR)$(MODULEDIR)/toolbelt/airlock-tool
	-rmdir $(DESTDIR)$(MODULEDIR)/toolbelt 2>/dev/null
	-rmdir $(DESTDIR)$(MODULEDIR) 2>/dev/null

clean:
	rm -rf build build-san build-test build-san-test build-fuzz

-include $(shell find $(BUILD)/obj $(BUILD)/obj-netmod $(BUILD)/obj-init $(BUILD)/obj-sbinit -name "*.d" 2>/dev/null)
