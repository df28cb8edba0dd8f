/* cpuinfo.h: what a performance figure needs to be read by: the CPU model, its SIMD
 * extensions, OpenBLAS's kernel family and build, the thread counts. For logs, benchmarks and
 * run reports (the trainer's start-up log and report.json can carry wc_cpuinfo_describe's line).
 *
 * Not here: choosing code paths by CPU (wildcpu's own code is compiled for the baseline ISA so
 * every node of a cluster computes the same bits; only OpenBLAS picks kernels per CPU). */
#ifndef WILDCPU_CPUINFO_H
#define WILDCPU_CPUINFO_H

#include <stddef.h>

#include "wildcpu/json.h"

typedef struct wc_cpuinfo {
    char model[128];      /* /proc/cpuinfo "model name" ("unknown" if none) */
    char isa[64];         /* the SIMD extensions present, e.g. "sse4.2 avx avx2 fma avx512f" */
    char blas_core[32];   /* openblas_get_corename(), e.g. "Zen", "SkylakeX", "Haswell" */
    char blas_config[128]; /* openblas_get_config(): version and build options */
    int blas_threads;     /* openblas_get_num_threads() now */
    int online_cpus;      /* sysconf(_SC_NPROCESSORS_ONLN) */
} wc_cpuinfo;

/* Fills info; never fails (unknown fields say "unknown"). */
void wc_cpuinfo_get(wc_cpuinfo *info);
/* One line: "CPU <model> (<n> online; <isa>), OpenBLAS <core> (<config>)" into buf; returns
 * buf. */
const char *wc_cpuinfo_describe(char *buf, size_t size);
/* The same as members of the JSON object being built: cpu_model, cpu_isa, openblas_core,
 * openblas_config (strings), online_cpus (an integer). */
void wc_cpuinfo_json_members(wc_json *j);

#endif
