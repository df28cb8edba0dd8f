/* cpuinfo.h: what a performance figure needs to be read by: the CPU model, its SIMD
 * extensions, OpenBLAS's kernel family and build, the thread counts. For logs, benchmarks and
 * run reports (the trainer's start-up log and report.json can carry wc_cpuinfo_describe's line).
 *
 * The code paths chosen by CPU are reported here too: OpenBLAS's kernels, and whether the
 * Winograd products run on wildcpu's own AVX2 or AVX-512 kernel (winograd.h). Not here: choosing
 * them (OpenBLAS and wino_gemm.c do); the rest of wildcpu is compiled for the baseline ISA. */
#ifndef WILDCPU_CPUINFO_H
#define WILDCPU_CPUINFO_H

#include <stddef.h>

#include "wildcpu/json.h"

typedef struct wc_cpuinfo {
    char model[128];           /* /proc/cpuinfo "model name" ("unknown" if none) */
    char vendor[32];           /* "vendor_id": "AuthenticAMD", "GenuineIntel" ("unknown" if none) */
    int family, model_number;  /* "cpu family" and "model" (-1 if none): a virtual machine's
                                * model name may be only "AMD EPYC", these tell Zen 3 from 5 */
    char isa[64];              /* the SIMD extensions present, e.g. "sse4.2 avx avx2 fma avx512f" */
    char blas_core[32];        /* openblas_get_corename(), e.g. "Zen", "SkylakeX", "Haswell" */
    char blas_core_origin[64]; /* who chose it (blas_core.h): "OpenBLAS", "OPENBLAS_CORETYPE",
                                  "wildcpu, OpenBLAS detected Prescott" */
    char blas_config[128];     /* openblas_get_config(): version and build options */
    int blas_threads;          /* openblas_get_num_threads() now */
    int online_cpus;           /* sysconf(_SC_NPROCESSORS_ONLN) */
    const char *products;      /* the Winograd products: "own-avx512", "own-avx2" or "openblas" */
} wc_cpuinfo;

/* Fills info; never fails (unknown fields say "unknown"). */
void wc_cpuinfo_get(wc_cpuinfo *info);
/* One line: "CPU <model> (<vendor> family <f> model <m>; <n> online; <isa>), OpenBLAS <core>
 * (chosen by <origin>; <config>), Winograd products <products>" into buf; returns buf. */
const char *wc_cpuinfo_describe(char *buf, size_t size);
/* The same as members of the JSON object being built: cpu_model, cpu_vendor, cpu_isa,
 * openblas_core, openblas_core_origin, openblas_config, winograd_products ("own-avx512",
 * "own-avx2" or "openblas") (strings), cpu_family, cpu_model_number (integers, null if unknown),
 * online_cpus (an integer). */
void wc_cpuinfo_json_members(wc_json *j);
/* The kernels whose rounding a result depends on, "openblas:<core>/products:<own|openblas>"
 * (the own products at 8 and 16 lanes give the same bits, so both are "own"), into buf;
 * returns buf. Two computations of the same steps with the same string give the same bits;
 * with different ones they may not (OpenBLAS's Haswell and SkylakeX kernels do not: another
 * CPU type, or another OPENBLAS_CORETYPE). At most WC_KERNELS_MAX bytes with the NUL. */
#define WC_KERNELS_MAX 96
const char *wc_cpuinfo_kernels(char *buf, size_t size);
/* Warns about a choice of kernels the environment asked for and did not get: an
 * OPENBLAS_CORETYPE that OpenBLAS did not take (a misspelt name: it detects its own), a
 * WILDCPU_GEMM that is no choice. Both change the bits; call it on one rank. */
void wc_cpuinfo_warn_ignored(void);

#endif
