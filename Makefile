# wildcpu: build, test, benchmark, install.
#
#   make            library build/libwildcpu.a and program build/wildcpu
#   make deps       install the Debian packages it needs (root or sudo)
#   make demo       train on the bundled sample region, then write the risk map (installs deps)
#   make test       every test; the last line is "N passed, N failed"   (SAN=1: ASan+UBSan)
#   make test-slurm bring up a local Slurm, run the job scripts under it, tear it down
#   make bench      single-thread training throughput against the sgemm peak
#   make format     clang-format the sources
#   make install PREFIX=/usr/local

PREFIX ?= /usr/local
SAN ?= 0
CC ?= cc

PKGS := openblas gdal zlib ompi-c
# Debian packages: what the program links against, what the tests and job scripts run.
DEB_BUILD := build-essential pkg-config libopenblas-dev libopenmpi-dev openmpi-bin \
             libgdal-dev gdal-bin zlib1g-dev
DEB_TEST := python3 python3-gdal python3-numpy python3-torch file procps
DEB_SLURM := slurm-wlm munge slurmctld slurmd

ifeq ($(SAN),1)
BUILD := build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD := build
SANFLAGS :=
endif

# No -ffast-math: it breaks NaN checks, finite differences and bitwise reproducibility.
# No -march=native: every node of a cluster must compute the same bits. -O3 (not -O2) because
# GCC 12 vectorizes the Winograd transforms and the elementwise layers only there; it keeps
# IEEE semantics (ISO C mode also keeps a*b+c from being fused into an FMA).
CFLAGS ?= -O3 -g
CFLAGS += -std=c11 -Wall -Wextra -Wshadow -Wno-unused-parameter -D_GNU_SOURCE -Iinclude \
          $(SANFLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
LDFLAGS += $(SANFLAGS)

LIB_SRC := $(filter-out src/main.c,$(wildcard src/*.c))
LIB_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TOOL_SRC := $(wildcard tools/*.c)
TOOL_BIN := $(patsubst tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))

.PHONY: all deps deps-slurm demo test test-slurm bench format install clean sample-data

all: $(BUILD)/wildcpu $(TEST_BIN) $(TOOL_BIN)

$(BUILD)/obj/%.o: src/%.c $(wildcard include/wildcpu/*.h) | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libwildcpu.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/wildcpu: src/main.c $(BUILD)/libwildcpu.a
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(BUILD)/libwildcpu.a $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c tests/harness.h $(BUILD)/libwildcpu.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(BUILD)/libwildcpu.a $(LDLIBS) -o $@

# test_net counts every allocation a training step makes (see test_no_allocation_in_step)
$(BUILD)/tests/test_net: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
                                    -Wl,--wrap=posix_memalign,--wrap=aligned_alloc

$(BUILD)/tools/%: tools/%.c $(BUILD)/libwildcpu.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(BUILD)/libwildcpu.a $(LDLIBS) -o $@

# The dependency stamp: present once pkg-config finds every library. A fresh machine gets the
# packages installed on the first build, so `make demo` and `make test` work from nothing.
$(BUILD)/.deps-ok:
	@pkg-config --exists $(PKGS) && command -v mpirun >/dev/null && command -v gdalinfo >/dev/null \
	  || $(MAKE) --no-print-directory deps
	@mkdir -p $(BUILD) && touch $@

deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get update -qq && \
	$$SUDO apt-get install -y -qq --no-install-recommends $(DEB_BUILD) $(DEB_TEST)

deps-slurm:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get install -y -qq --no-install-recommends $(DEB_SLURM)

demo: $(BUILD)/wildcpu
	bash tools/demo.sh $(BUILD)/wildcpu

test: all
	@bash tests/run $(BUILD)

test-slurm: $(BUILD)/wildcpu | deps-slurm
	@bash tests/slurm/run $(BUILD)

bench: $(BUILD)/tools/bench
	$(BUILD)/tools/bench

# The bundled sample region: generated, never edited by hand (tests check it regenerates
# bit for bit).
SAMPLE_ARGS := --size 512 --tile 256 --seed 1
sample-data: $(BUILD)/wildcpu
	rm -rf data/sample
	$(BUILD)/wildcpu synth --out data/sample $(SAMPLE_ARGS)

format:
	clang-format -i src/*.c include/wildcpu/*.h tests/*.c tests/*.h tools/*.c

install: $(BUILD)/wildcpu $(BUILD)/libwildcpu.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/wildcpu
	install -m 755 $(BUILD)/wildcpu $(DESTDIR)$(PREFIX)/bin/wildcpu
	install -m 644 $(BUILD)/libwildcpu.a $(DESTDIR)$(PREFIX)/lib/libwildcpu.a
	install -m 644 include/wildcpu/*.h $(DESTDIR)$(PREFIX)/include/wildcpu/

clean:
	rm -rf build
