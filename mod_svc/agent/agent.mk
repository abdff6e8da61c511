# mod_svc/agent/agent.mk: build/svc-agent, the deploy agent that runs on a
# deploy target (docs/api/deployments.md, docs/operations.md). Included by
# the Makefile, whose variables it reuses (BUILD, CC, OPT, WARN, LDSAN;
# SANITIZE=1 works here too).
#
# A separate program: compiled from mod_svc/agent/*.c, plus base/svc_bwrap.c
# (plain C, the bubblewrap options it shares with a run's sandbox, compiled
# here on its own), linked with libcurl, jansson and libc, never with the
# module's objects or APR: it runs on other machines than httpd and carries
# nothing of the service.

AGENT_SRC    := $(sort $(wildcard mod_svc/agent/*.c))
AGENT_OBJ    := $(patsubst mod_svc/agent/%.c,$(BUILD)/agent/%.o,$(AGENT_SRC)) \
                $(BUILD)/agent/svc_bwrap.o
AGENT_CFLAGS := $(OPT) $(WARN) -DSVC_VERSION=\"$(VERSION)\" \
                $(shell pkg-config --cflags jansson libcurl 2>/dev/null) -Imod_svc/agent
AGENT_LIBS   := $(shell pkg-config --libs jansson libcurl 2>/dev/null || echo -ljansson -lcurl)

all: $(BUILD)/svc-agent

$(BUILD)/agent/%.o: mod_svc/agent/%.c $(wildcard mod_svc/agent/*.h) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(AGENT_CFLAGS) -c $< -o $@

$(BUILD)/agent/svc_bwrap.o: mod_svc/base/svc_bwrap.c mod_svc/base/svc_bwrap.h $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(AGENT_CFLAGS) -c $< -o $@

# Its files are held to the rule of the house too: no loops.
$(BUILD)/.layers-ok: $(AGENT_OBJ)

$(BUILD)/svc-agent: $(AGENT_OBJ)
	$(CC) -o $@ $^ $(LDSAN) $(AGENT_LIBS) -Wl,-z,relro,-z,now
