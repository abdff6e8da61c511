# mod_svc: the service as one Apache httpd module, plus svcctl.
#
#   make            build build/mod_svc.so and build/svcctl
#   make run        install what is missing, build, run a local instance
#   make test       every test level (unit, integration, conformance)
#   make bench      wrk against the running stack
#   SANITIZE=1      build (and test) with AddressSanitizer and UBSan
#
# The core (mod_svc/core) is compiled without the httpd include path, so a
# core file that includes an httpd header does not build.

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

CFLAGS_CORE := $(OPT) $(WARN) -DSVC_VERSION=\"$(VERSION)\" $(APR_CFLAGS) $(DEP_CFLAGS) \
               -I$(BUILD) -Imod_svc/core
CFLAGS_GLUE := $(CFLAGS_CORE) $(HTTPD_INC)
LIBS        := $(APR_LIBS) $(DEP_LIBS)

CORE_SRC := $(sort $(wildcard mod_svc/core/*.c))
GLUE_SRC := $(sort $(wildcard mod_svc/mod_svc*.c))
CORE_OBJ := $(patsubst mod_svc/core/%.c,$(BUILD)/core/%.o,$(CORE_SRC)) \
            $(BUILD)/core/svc_migrations.o
GLUE_OBJ := $(patsubst mod_svc/%.c,$(BUILD)/glue/%.o,$(GLUE_SRC))
UNIT_SRC := $(sort $(wildcard t/unit/test_*.c))
UNIT_BIN := $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRC))
SQL      := $(sort $(wildcard sql/[0-9]*.sql))

.PHONY: all clean test unit run bench install check-env
all: $(BUILD)/mod_svc.so $(BUILD)/svcctl

# Rebuild everything when the flags change (SANITIZE=1 and back).
$(BUILD)/.flags: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS_GLUE) $(LDSAN)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_GLUE) $(LDSAN)' > $@
FORCE:

$(BUILD)/svc_migrations.c: $(SQL) tools/embed-sql.pl | $(BUILD)/.flags
	perl tools/embed-sql.pl $(SQL) > $@.tmp && mv $@.tmp $@

$(BUILD)/core/svc_migrations.o: $(BUILD)/svc_migrations.c $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_CORE) -c $< -o $@

$(BUILD)/core/%.o: mod_svc/core/%.c $(wildcard mod_svc/core/*.h) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_CORE) -c $< -o $@

$(BUILD)/glue/%.o: mod_svc/%.c $(wildcard mod_svc/*.h mod_svc/core/*.h) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_GLUE) -c $< -o $@

# apxs tells us how httpd was built; we link the shared object ourselves so
# the core objects can be shared with svcctl and the unit tests.
$(BUILD)/mod_svc.so: $(GLUE_OBJ) $(CORE_OBJ)
	$(CC) -shared -o $@ $^ $(LDSAN) $(LIBS) -Wl,-z,relro,-z,now

$(BUILD)/svcctl: $(BUILD)/svcctl.o $(CORE_OBJ)
	$(CC) -o $@ $^ $(LDSAN) $(LIBS)

$(BUILD)/svcctl.o: mod_svc/svcctl.c $(wildcard mod_svc/core/*.h) $(BUILD)/.flags
	$(CC) $(CFLAGS_CORE) -c $< -o $@

$(BUILD)/unit/%: t/unit/%.c t/unit/svc_test.h $(CORE_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_CORE) -It/unit -o $@ $< $(CORE_OBJ) $(LDSAN) $(LIBS) -lpthread

unit: $(UNIT_BIN)

test:
	SANITIZE=$(SANITIZE) tools/test.sh

run:
	tools/run.sh

bench:
	tools/bench.sh

clean:
	rm -rf $(BUILD) t/logs t/conf/httpd.conf t/conf/apache_test_config.pm t/TEST \
	    t/conf/extra.conf t/htdocs/index.html

# make deb, make rpm, make srpm, make test-packages
include packaging/packaging.mk
