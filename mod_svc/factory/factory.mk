# mod_svc/factory/factory.mk: build/svc-factory, the default factory program
# of a run (docs/api/factory-protocol.md). Included by the Makefile, whose
# variables it reuses (BUILD, CC, OPT, WARN, LDSAN; SANITIZE=1 works here
# too).
#
# A separate program: compiled from mod_svc/factory/*.c only, linked with
# jansson and libc only, never with the module's objects or APR, so what runs
# in a run's sandbox carries nothing of the service.

FACTORY_SRC    := $(sort $(wildcard mod_svc/factory/*.c))
FACTORY_OBJ    := $(patsubst mod_svc/factory/%.c,$(BUILD)/factory/%.o,$(FACTORY_SRC))
FACTORY_CFLAGS := $(OPT) $(WARN) $(shell pkg-config --cflags jansson 2>/dev/null) \
                  -Imod_svc/factory
FACTORY_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)

all: $(BUILD)/svc-factory

$(BUILD)/factory/%.o: mod_svc/factory/%.c $(wildcard mod_svc/factory/*.h) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(FACTORY_CFLAGS) -c $< -o $@

$(BUILD)/svc-factory: $(FACTORY_OBJ)
	$(CC) -o $@ $^ $(LDSAN) $(FACTORY_LIBS) -Wl,-z,relro,-z,now
