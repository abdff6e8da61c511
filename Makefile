# mod_svc: the service as one Apache httpd module, plus svcctl.
#
#   make            build build/mod_svc.so and build/svcctl
#   make run        install what is missing, build, run a local instance
#                   (NODES=2: two httpd nodes on PORT and PORT+1, one database)
#   make install    the web UI's files under $(DESTDIR)/usr/share/mod_svc/ui
#   make test       every test level (unit, integration, conformance)
#   make bench      wrk against the running stack
#   make fuzz       libFuzzer targets of the parsers, FUZZ_TIME s each
#                   (make fuzz-replay: their corpora once; docs/fuzzing.md)
#   SANITIZE=1      build (and test) with AddressSanitizer and UBSan
#
# The layers (docs/architecture.md) are enforced here: base/ compiles with
# its own headers only; the kernel with base/'s and its own; an area with
# those, its own folder, and the public header of every area (copied to
# build/public, so another area's private headers are out of reach); none
# of them sees an httpd header. Only the glue (mod_svc/mod_svc*.c) does.
# After linking, tools/check-layers.pl fails the build on any loop of
# includes or calls between files, and tools/check-logtags.pl on a log tag
# (SVCnnnn) used at two call sites or a log call without one.

# The one version number: the module (health, OpenAPI, Server token), svcctl
# --version, and the Debian and RPM packages (packaging/packaging.mk) take it
# from here.
VERSION  := 0.1.0

APXS     ?= $(shell command -v apxs 2>/dev/null || command -v apxs2 2>/dev/null)
SANITIZE ?= 0
BUILD    := build
CC       ?= cc

APR_CFLAGS  := $(shell apr-1-config --cppflags --includes 2>/dev/null) \
               $(shell apu-1-config --includes 2>/dev/null)
APR_LIBS    := $(shell apr-1-config --link-ld --libs 2>/dev/null) \
               $(shell apu-1-config --link-ld --libs 2>/dev/null)
DEP_PKGS    := jansson libsodium libcurl libpq openssl
DEP_CFLAGS  := $(shell pkg-config --cflags $(DEP_PKGS) 2>/dev/null)
DEP_LIBS    := $(shell pkg-config --libs $(DEP_PKGS) 2>/dev/null)
HTTPD_INC   := $(if $(APXS),-I$(shell $(APXS) -q INCLUDEDIR 2>/dev/null))

WARN := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes \
        -Wmissing-prototypes -Wformat=2 -Wformat-security -Wvla -Wwrite-strings \
        -Wno-unused-parameter
OPT  := -O2 -g -fPIC -std=gnu11 -fno-strict-aliasing -fstack-protector-strong \
        -D_FORTIFY_SOURCE=2

ifeq ($(SANITIZE),1)
OPT  := -O1 -g -fPIC -std=gnu11 -fno-omit-frame-pointer \
        -fsanitize=address,undefined -fno-sanitize-recover=all
LDSAN := -fsanitize=address,undefined
endif

AREAS       := $(notdir $(patsubst %/,%,$(sort $(dir $(wildcard mod_svc/areas/*/*.c)))))
PUBLIC_H    := $(foreach a,$(AREAS),$(BUILD)/public/svc_$(a).h)

CFLAGS_ALL  := $(OPT) $(WARN) -DSVC_VERSION=\"$(VERSION)\" $(APR_CFLAGS) $(DEP_CFLAGS) -MMD -MP
CFLAGS_BASE := $(CFLAGS_ALL) -Imod_svc/base
CFLAGS_KERN := $(CFLAGS_BASE) -Imod_svc/kernel
CFLAGS_TOP  := $(CFLAGS_KERN) -I$(BUILD)/public -Imod_svc/areas
CFLAGS_GLUE := $(CFLAGS_TOP) $(HTTPD_INC)
# Unit tests may look inside every area.
CFLAGS_UNIT := $(CFLAGS_TOP) $(foreach a,$(AREAS),-Imod_svc/areas/$(a)) -It/unit
LIBS        := $(APR_LIBS) $(DEP_LIBS)

BASE_OBJ := $(patsubst mod_svc/%.c,$(BUILD)/%.o,$(sort $(wildcard mod_svc/base/*.c))) \
            $(BUILD)/base/svc_migrations.o
KERN_OBJ := $(patsubst mod_svc/%.c,$(BUILD)/%.o,$(sort $(wildcard mod_svc/kernel/*.c)))
AREA_OBJ := $(patsubst mod_svc/%.c,$(BUILD)/%.o,$(sort $(wildcard mod_svc/areas/*/*.c))) \
            $(BUILD)/areas/svc_areas.o
# Everything but the httpd glue: the module, svcctl and the unit tests link it.
CORE_OBJ := $(BASE_OBJ) $(KERN_OBJ) $(AREA_OBJ)
GLUE_OBJ := $(patsubst mod_svc/%.c,$(BUILD)/glue/%.o,$(sort $(wildcard mod_svc/mod_svc*.c)))
UNIT_SRC := $(sort $(wildcard t/unit/test_*.c))
UNIT_BIN := $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRC))
SQL      := $(sort $(wildcard sql/[0-9]*.sql))

.PHONY: all clean test unit run bench install install-ui check-env FORCE
all: $(BUILD)/mod_svc.so $(BUILD)/svcctl $(BUILD)/.layers-ok $(BUILD)/.logtags-ok

-include $(shell find $(BUILD) -name '*.d' -type f -not -path '$(BUILD)/pkg*' 2>/dev/null)

# Rebuild everything when the flags change (SANITIZE=1 and back).
$(BUILD)/.flags: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS_GLUE) $(LDSAN)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_GLUE) $(LDSAN)' > $@
FORCE:

$(BUILD)/svc_migrations.c: $(SQL) tools/embed-sql.pl | $(BUILD)/.flags
	perl tools/embed-sql.pl $(SQL) > $@.tmp && mv $@.tmp $@

$(BUILD)/base/svc_migrations.o: $(BUILD)/svc_migrations.c $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) -c $< -o $@

$(BUILD)/base/%.o: mod_svc/base/%.c $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) -c $< -o $@

$(BUILD)/kernel/%.o: mod_svc/kernel/%.c $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_KERN) -c $< -o $@

# An area's public header, where the other areas (and the glue) can see it.
define public_header
$(BUILD)/public/svc_$(1).h: mod_svc/areas/$(1)/svc_$(1).h
	@mkdir -p $$(@D)
	cp $$< $$@
endef
$(foreach a,$(AREAS),$(eval $(call public_header,$(a))))

# An area file: its own folder, the kernel, base/ and the public headers.
$(BUILD)/areas/%.o: mod_svc/areas/%.c $(PUBLIC_H) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_KERN) -I$(dir $<) -I$(BUILD)/public -c $< -o $@

# The registry knows every area, through public headers only.
$(BUILD)/areas/svc_areas.o: mod_svc/areas/svc_areas.c $(PUBLIC_H) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_TOP) -c $< -o $@

$(BUILD)/glue/%.o: mod_svc/%.c $(PUBLIC_H) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GLUE) -c $< -o $@

# apxs tells us how httpd was built; we link the shared object ourselves so
# the core objects can be shared with svcctl and the unit tests.
$(BUILD)/mod_svc.so: $(GLUE_OBJ) $(CORE_OBJ)
	$(CC) -shared -o $@ $^ $(LDSAN) $(LIBS) -Wl,-z,relro,-z,now

$(BUILD)/svcctl: $(BUILD)/svcctl.o $(CORE_OBJ)
	$(CC) -o $@ $^ $(LDSAN) $(LIBS)

$(BUILD)/svcctl.o: mod_svc/svcctl.c $(PUBLIC_H) $(BUILD)/.flags
	$(CC) $(CFLAGS_TOP) -c $< -o $@

# No loops between files, of includes or of calls (docs/architecture.md).
$(BUILD)/.layers-ok: $(GLUE_OBJ) $(CORE_OBJ) $(BUILD)/svcctl.o tools/check-layers.pl
	perl tools/check-layers.pl --build $(BUILD) mod_svc
	@touch $@

# Every log call site has a tag of its own, as httpd's APLOGNO (docs/operations.md).
$(BUILD)/.logtags-ok: $(shell find mod_svc -name '*.c') tools/check-logtags.pl
	@mkdir -p $(BUILD)
	perl tools/check-logtags.pl mod_svc
	@touch $@

$(BUILD)/unit/%: t/unit/%.c t/unit/svc_test.h $(CORE_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT) -o $@ $< $(CORE_OBJ) $(LDSAN) $(LIBS) -lpthread

# The factory is a program of its own (factory.mk): the test of its path
# rules links its objects, not the module's.
$(BUILD)/unit/test_factory_paths: t/unit/test_factory_paths.c t/unit/svc_test.h \
        $(BUILD)/factory/svc_factory_reply.o $(BUILD)/factory/svc_factory_text.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT) -Imod_svc/factory -o $@ $< $(filter %.o,$^) $(LDSAN) $(LIBS)

# The deploy agent too (agent.mk): the test of its health probes links
# the agent's objects, with libcurl.
$(BUILD)/unit/test_agent_probe: t/unit/test_agent_probe.c t/unit/svc_test.h \
        $(BUILD)/agent/svc_agent_probe.o $(BUILD)/agent/svc_agent_log.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_UNIT) -Imod_svc/agent -o $@ $< $(filter %.o,$^) $(LDSAN) $(LIBS) -lpthread

unit: $(UNIT_BIN)

# The web UI: static files, no build step (docs/ui.md). The packages install
# them here (DESTDIR: their staging root), the assets in a directory named
# by their content's hash (tools/install-ui.sh); conf/svc.conf serves UIDIR.
UIDIR   ?= /usr/share/mod_svc/ui
install-ui:
	tools/install-ui.sh $(DESTDIR)$(UIDIR)

# make install: what the packages install that is not built (the UI).
install: install-ui

# The suite in TEST_JOBS parallel shards (tools/test-shards.sh, docs/testing.md).
TEST_JOBS ?= 2
test:
	SANITIZE=$(SANITIZE) TEST_JOBS=$(TEST_JOBS) tools/test-shards.sh

run:
	tools/run.sh

bench:
	tools/bench.sh

clean:
	rm -rf $(BUILD) build-fuzz t/logs t/conf/httpd.conf t/conf/apache_test_config.pm t/TEST \
	    t/conf/extra.conf t/htdocs/index.html

# make deb, make rpm, make srpm, make test-packages
include packaging/packaging.mk
# build/svc-factory, the default factory program of a run
include mod_svc/factory/factory.mk
# build/svc-agent, the deploy agent of a deploy target
include mod_svc/agent/agent.mk
# make fuzz, make fuzz-replay: libFuzzer targets (clang), in build-fuzz
include t/fuzz/fuzz.mk
