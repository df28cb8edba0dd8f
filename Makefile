# wildcpu: build, test, benchmark, install.
#
#   make            library build/libwildcpu.a and program build/wildcpu
#   make deps       install the Debian packages it needs (root or sudo)
#   make demo       train on the bundled sample region, then write the risk map (installs deps)
#   make test       every test; the last line is "N passed, N failed"   (SAN=1: ASan+UBSan)
#   make test-slurm bring up a local Slurm, run the job scripts under it, tear it down
#   make test-gis   the map in QGIS (headless) and rasterio (make deps-gis installs them)
#   make docs-qgis  docs/qgis-view.png: the sample map rendered by QGIS with its style
#   make bench      training throughput against PyTorch: 1 thread, 2 threads, 2 ranks, memory,
#                   and whether the cores share a cache (tools/cache_share)
#                   (BENCH_ROUNDS, BENCH_SECONDS; BENCH_PREDICT=1 adds prediction Mpx/s)
#   make bench-scaling  1, 2, 4 ranks over an emulated 10 Gb/s and 1 Gb/s network, the sizing
#                   model fitted and extrapolated to 1024 ranks (root)
#   make bench-overlap  the reduction overlapped with backward against --no-overlap (root)
#   make bench-ckpt the cost of background checkpoints per step and per interval
#   make bench-fault    the work lost per killed rank at the default checkpoint interval
#   make fuzz       fuzz the checkpoint reader and the spec parser, FUZZ_SECONDS (300) each
#   make format     clang-format the sources
#   make install PREFIX=/usr/local

PREFIX ?= /usr/local
SAN ?= 0
CC ?= cc

PKGS := openblas gdal zlib ompi-c
# Debian packages: what the program links against, what the tests and job scripts run (gdb:
# tests/t_predict_live.sh pauses wildcpu at an exact read).
DEB_BUILD := build-essential pkg-config libopenblas-dev libopenmpi-dev openmpi-bin \
             libgdal-dev gdal-bin zlib1g-dev
DEB_TEST := python3 python3-gdal python3-numpy python3-torch file procps gdb
DEB_SLURM := slurm-wlm munge slurmctld slurmd
# the map in the real clients (make test-gis): QGIS headless and rasterio
DEB_GIS := qgis python3-qgis python3-rasterio

ifeq ($(SAN),1)
BUILD := build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD := build
SANFLAGS :=
endif

# No -ffast-math: it breaks NaN checks, finite differences and bitwise reproducibility.
# No -march=native: one binary must run on every node of a cluster, and nodes of one kind must
# compute the same bits; what depends on the CPU is chosen at run time and reported (OpenBLAS's
# kernels, src/wino_gemm.c's AVX2/FMA products; docs/cli.md, WILDCPU_GEMM). -O3 (not -O2) because
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

.PHONY: all deps deps-slurm deps-gis demo test test-slurm test-gis docs-qgis bench format install \
        clean sample-data

all: $(BUILD)/wildcpu $(TEST_BIN) $(TOOL_BIN)

# -MMD -MP: each object depends on exactly the headers it includes (build/obj/*.d)
$(BUILD)/obj/%.o: src/%.c | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libwildcpu.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/wildcpu: src/main.c $(BUILD)/libwildcpu.a
	$(CC) $(CFLAGS) -MMD -MP -MF $@.d $(LDFLAGS) $< $(BUILD)/libwildcpu.a $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c $(BUILD)/libwildcpu.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -MF $@.d $(LDFLAGS) $< $(BUILD)/libwildcpu.a $(LDLIBS) -o $@

# test_net counts every allocation a training step makes (see test_no_allocation_in_step)
$(BUILD)/tests/test_net: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
                                    -Wl,--wrap=posix_memalign,--wrap=aligned_alloc

$(BUILD)/tools/%: tools/%.c $(BUILD)/libwildcpu.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -MF $@.d $(LDFLAGS) $< $(BUILD)/libwildcpu.a $(LDLIBS) -o $@

-include $(LIB_OBJ:.o=.d) $(BUILD)/wildcpu.d $(TEST_BIN:=.d) $(TOOL_BIN:=.d)

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

deps-gis:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get update -qq && \
	$$SUDO apt-get install -y -qq --no-install-recommends $(DEB_GIS)

demo: $(BUILD)/wildcpu
	bash tools/demo.sh $(BUILD)/wildcpu

test: all
	@bash tests/run $(BUILD)

test-slurm: $(BUILD)/wildcpu | deps-slurm
	@bash tests/slurm/run $(BUILD)

# not part of `make test`: QGIS is a large install (make deps-gis); skipped when it is absent
test-gis: $(BUILD)/wildcpu
	@bash tests/gis/run $(BUILD)

# docs/qgis-view.png: the sample map as QGIS draws it with its style, and its legend
docs-qgis: $(BUILD)/wildcpu
	bash tools/qgis-view.sh $(BUILD)/wildcpu docs/qgis-view.png

# wildcpu beside its PyTorch peer, interleaved rounds, medians (tools/bench.sh says what and how)
bench: $(BUILD)/tools/bench $(BUILD)/tools/cache_share $(BUILD)/wildcpu
	bash tools/bench.sh $(BUILD) $(if $(filter 1,$(BENCH_PREDICT)),--predict)

# The bundled sample region: generated, never edited by hand (tests check it regenerates
# bit for bit).
SAMPLE_ARGS := --size 512 --tile 256 --seed 1
sample-data: $(BUILD)/wildcpu
	rm -rf data/sample
	$(BUILD)/wildcpu synth --out data/sample $(SAMPLE_ARGS)

format:
	clang-format -i src/*.c src/*.h include/wildcpu/*.h tests/*.c tests/*.h tools/*.c

install: $(BUILD)/wildcpu $(BUILD)/libwildcpu.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/wildcpu
	install -m 755 $(BUILD)/wildcpu $(DESTDIR)$(PREFIX)/bin/wildcpu
	install -m 644 $(BUILD)/libwildcpu.a $(DESTDIR)$(PREFIX)/lib/libwildcpu.a
	install -m 644 include/wildcpu/*.h $(DESTDIR)$(PREFIX)/include/wildcpu/

clean:
	rm -rf build

# ---- fuzzing (tests/fuzz/README.md) ---------------------------------------------------------
# `make fuzz`: a separate clang build of the library with libFuzzer, ASan and UBSan in
# build/fuzz, and two targets (tests/fuzz/fuzz_*.c), each run FUZZ_SECONDS from a corpus under
# build/fuzz seeded with the committed seeds and regression inputs. The same targets linked
# with tests/fuzz/replay.c in this build (gcc, or sanitizers with SAN=1) are the tests
# test_fuzz_ckpt and test_fuzz_spec, which replay those inputs in `make test`.
# `make fuzz-seeds` regenerates the checkpoint and spec seeds with real training runs.
FUZZ_SECONDS ?= 300
FUZZ_CC ?= clang
FUZZ_BUILD := build/fuzz
FUZZ_TARGETS := ckpt spec
FUZZ_SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
                 -fno-omit-frame-pointer -g -O1
FUZZ_CFLAGS := -std=c11 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -Iinclude \
               $(FUZZ_SANFLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_LDLIBS := $(shell pkg-config --libs openblas zlib 2>/dev/null) -lpthread -lm
FUZZ_OBJ := $(patsubst src/%.c,$(FUZZ_BUILD)/obj/%.o,$(LIB_SRC))
FUZZ_BIN := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))
FUZZ_REPLAY := $(patsubst %,$(BUILD)/tests/test_fuzz_%,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-build fuzz-deps fuzz-seeds
all: $(FUZZ_REPLAY)

$(FUZZ_REPLAY): $(BUILD)/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c \
                $(BUILD)/libwildcpu.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DREPLAY_TARGET='"$*"' $(LDFLAGS) $(filter %.c,$^) $(BUILD)/libwildcpu.a \
	  $(LDLIBS) -o $@

fuzz: fuzz-build
	@bash tests/fuzz/run $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_BIN)

$(FUZZ_BUILD)/obj/%.o: src/%.c $(wildcard include/wildcpu/*.h src/*.h) | $(FUZZ_BUILD)/.clang-ok
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_BUILD)/libwildcpu.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BIN): $(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libwildcpu.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_BUILD)/libwildcpu.a $(FUZZ_LDLIBS) -o $@

# present once clang links a libFuzzer program; on a fresh machine the packages are installed
# first (the library's own as for any build, then clang and its runtime, libclang-rt-14-dev)
FUZZ_PROBE = printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }\n' | \
             $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null
$(FUZZ_BUILD)/.clang-ok: | $(BUILD)/.deps-ok
	@$(FUZZ_PROBE) 2>/dev/null || { $(MAKE) --no-print-directory fuzz-deps && $(FUZZ_PROBE); }
	@mkdir -p $(FUZZ_BUILD) && touch $@

fuzz-deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get update -qq && \
	$$SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev

fuzz-seeds: $(BUILD)/wildcpu
	bash tests/fuzz/make-seeds $(BUILD)/wildcpu

# ---- scaling benchmark (tools/bench_scaling.sh) ---------------------------------------------
# `make bench-scaling` (root: a private network namespace whose loopback tc shapes): 1, 2 and 4
# ranks of unet-lite and data/models/unet-wide.spec over unshaped, 10 Gb/s and 1 Gb/s emulated
# links; fits README.md's sizing model and prints measured against modelled step times and the
# predictions for 8 to 1024 ranks. REPS, STEPS, WIDE_REPS, WIDE_STEPS (environment) set its
# length; the raw measurements stay in build/bench-scaling. Leaves no namespace, qdisc or
# process behind, also when interrupted.
.PHONY: bench-scaling
bench-scaling: $(BUILD)/wildcpu $(BUILD)/tools/netbench
	@bash tools/bench_scaling.sh $(BUILD)

# `make bench-overlap` (root, as bench-scaling): 2 ranks of unet-lite at an emulated 1 Gb/s,
# the reduction overlapped with backward against --no-overlap and against compute alone
# (tools/bench_overlap.sh; REPS, STEPS, LINK, BATCH, MICRO in the environment).
.PHONY: bench-overlap
bench-overlap: $(BUILD)/wildcpu
	@bash tools/bench_overlap.sh $(BUILD)

# `make bench-ckpt`: what a background checkpoint costs a step, and checkpointing every 1, 2
# and 10 minutes, for unet-lite and unet-wide (tools/bench_ckpt.sh; no root needed).
.PHONY: bench-ckpt
bench-ckpt: $(BUILD)/wildcpu
	@bash tools/bench_ckpt.sh $(BUILD)

# `make bench-fault`: the work a SIGKILLed rank costs at the default checkpoint interval (2 ranks
# of unet-lite on the sample region, three kills at random moments; about 10 minutes).
.PHONY: bench-fault
bench-fault: $(BUILD)/wildcpu
	@bash tools/bench_fault.sh $(BUILD)
