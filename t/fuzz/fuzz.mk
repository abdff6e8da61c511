# t/fuzz/fuzz.mk: libFuzzer targets of the parsers that take bytes from
# outside (docs/fuzzing.md). Included by the Makefile, whose variables it
# reuses (BUILD, WARN, APR_CFLAGS, DEP_CFLAGS, LIBS, CORE_OBJ, AREAS).
#
#   make fuzz                 build every target, run each FUZZ_TIME seconds
#   make fuzz FUZZ_TARGETS="diff jwt" FUZZ_TIME=600
#   make fuzz FUZZ_JOBS=1     one target at a time (default: one per core)
#   make fuzz-replay          run every input of every corpus once (regressions)
#   make fuzz-build           build only
#
# The targets are built with clang (-fsanitize=fuzzer,address,undefined)
# into build-fuzz/, from the same sources as the module, compiled again
# with the same include rules per layer (base/, kernel/, areas/); nothing
# of the httpd glue is linked. The factory's targets link the factory's
# parser objects only, as the factory program does.

FUZZ_CC      ?= clang
FUZZ_TIME    ?= 30
# Outside build/: the object-loop check reads build/ as one program, and
# these objects are a second copy of the core.
FUZZ_BUILD   := build-fuzz
FUZZ_SRC     := $(sort $(wildcard t/fuzz/fuzz_*.c))
FUZZ_ALL     := $(patsubst t/fuzz/fuzz_%.c,%,$(FUZZ_SRC))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_BIN     := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_ALL))

# -O1 with frame pointers: sanitizer reports with whole stacks. Every
# sanitizer finding stops the run (-fno-sanitize-recover).
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_OPT     := -O1 -g -fPIC -std=gnu11 -fno-omit-frame-pointer -fno-strict-aliasing \
                $(FUZZ_SAN) -fsanitize=fuzzer-no-link
# The warnings of the module's build; clang's -Wbitwise-instead-of-logical
# is off, as gcc has no such warning and the code uses `|` on purpose
# where every check must run (svc_improvements.c reports each bad filter).
FUZZ_WARN    := $(WARN) -Wno-bitwise-instead-of-logical
FUZZ_CF_ALL  := $(FUZZ_OPT) $(FUZZ_WARN) -DSVC_VERSION=\"$(VERSION)\" $(APR_CFLAGS) $(DEP_CFLAGS) \
                -MMD -MP
FUZZ_CF_BASE := $(FUZZ_CF_ALL) -Imod_svc/base
FUZZ_CF_KERN := $(FUZZ_CF_BASE) -Imod_svc/kernel
FUZZ_CF_TOP  := $(FUZZ_CF_KERN) -I$(BUILD)/public -Imod_svc/areas
# A target may look inside every area, as the unit tests do.
FUZZ_CF_TGT  := $(FUZZ_CF_TOP) $(foreach a,$(AREAS),-Imod_svc/areas/$(a)) -It/fuzz
FUZZ_CF_FACT := $(FUZZ_OPT) $(FUZZ_WARN) $(shell pkg-config --cflags jansson 2>/dev/null) \
                -Imod_svc/factory -It/fuzz -MMD -MP

FUZZ_OBJ     := $(FUZZ_BUILD)/obj
FUZZ_CORE    := $(patsubst $(BUILD)/%,$(FUZZ_OBJ)/%,$(CORE_OBJ))
# The factory's parsers and what they need, without its main() and the
# parts that run git or write files.
FUZZ_FACT    := $(patsubst %,$(FUZZ_OBJ)/factory/svc_factory_%.o,task reply text)

.PHONY: fuzz fuzz-build fuzz-replay fuzz-check-tools
# Objects made by pattern rules only: kept, not deleted as intermediates.
.SECONDARY: $(FUZZ_CORE) $(FUZZ_FACT) $(FUZZ_OBJ)/common.o \
            $(patsubst %,$(FUZZ_OBJ)/fuzz_%.o,$(FUZZ_ALL))

# A clear word when the compiler or libFuzzer is missing, rather than a
# link error further on.
fuzz-check-tools:
	@command -v $(FUZZ_CC) >/dev/null 2>&1 \
	    || { echo "make fuzz: $(FUZZ_CC) not found; run tools/deps.sh --group test" >&2; exit 1; }
	@echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' \
	    | $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null \
	    || { echo "make fuzz: $(FUZZ_CC) cannot link libFuzzer (-fsanitize=fuzzer); run" \
	              "tools/deps.sh --group test (Debian: libclang-rt-dev)" >&2; exit 1; }

fuzz-build: fuzz-check-tools $(FUZZ_BIN)

fuzz: fuzz-build
	tools/fuzz.sh run $(FUZZ_BUILD) $(FUZZ_TIME) $(FUZZ_TARGETS)

fuzz-replay: fuzz-build
	tools/fuzz.sh replay $(FUZZ_BUILD) 0 $(FUZZ_TARGETS)

# Rebuild the fuzz objects when their flags change.
$(FUZZ_BUILD)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(FUZZ_CC) $(FUZZ_CF_TGT)' | cmp -s - $@ || echo '$(FUZZ_CC) $(FUZZ_CF_TGT)' > $@

$(FUZZ_OBJ)/base/svc_migrations.o: $(BUILD)/svc_migrations.c $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CF_BASE) -c $< -o $@

$(FUZZ_OBJ)/base/%.o: mod_svc/base/%.c $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CF_BASE) -c $< -o $@

$(FUZZ_OBJ)/kernel/%.o: mod_svc/kernel/%.c $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CF_KERN) -c $< -o $@

$(FUZZ_OBJ)/areas/svc_areas.o: mod_svc/areas/svc_areas.c $(PUBLIC_H) $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CF_TOP) -c $< -o $@

$(FUZZ_OBJ)/areas/%.o: mod_svc/areas/%.c $(PUBLIC_H) $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CF_KERN) -I$(dir $<) -I$(BUILD)/public -c $< -o $@

$(FUZZ_OBJ)/factory/%.o: mod_svc/factory/%.c $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CF_FACT) -c $< -o $@

# The shared part of the service's targets: pools made visible to ASan.
$(FUZZ_OBJ)/common.o: t/fuzz/common.c t/fuzz/fuzz.h t/fuzz/fuzz_svc.h $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CF_TGT) -c $< -o $@

$(FUZZ_OBJ)/fuzz_%.o: t/fuzz/fuzz_%.c t/fuzz/fuzz.h t/fuzz/fuzz_svc.h $(FUZZ_BUILD)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(if $(filter factory_%,$*),$(FUZZ_CF_FACT),$(FUZZ_CF_TGT)) -c $< -o $@

$(FUZZ_BUILD)/fuzz_factory_%: $(FUZZ_OBJ)/fuzz_factory_%.o $(FUZZ_FACT)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ \
	    $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_OBJ)/fuzz_%.o $(FUZZ_OBJ)/common.o $(FUZZ_CORE)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(LIBS) -ldl
