/* blas_core.h: OpenBLAS's kernels fit for the CPU it runs on.
 *
 * OpenBLAS (DYNAMIC_ARCH, as Debian builds it) chooses its kernels once, while the library
 * loads, from the CPU's vendor, family and model. A CPU newer than the OpenBLAS build is not in
 * its tables and gets the Prescott fallback (SSE3): Debian 12's OpenBLAS 0.3.21 on an Intel Xeon
 * of family 6 model 207 multiplies at 21 GFLOP/s on one core where its SkylakeX kernels reach
 * 141-152 on the same core, and wildcpu trains at 0.55x of the speed it has with them. The one
 * documented way to choose is OPENBLAS_CORETYPE, read only at load time, so the choice is made
 * by setting it and executing the program again, before MPI starts.
 *
 * The rule is narrow on purpose: only a core without AVX2 kernels on a CPU with AVX2 and FMA is
 * replaced (that is a CPU OpenBLAS did not recognize, not a choice it made), by the core its
 * tables give the CPU's features: SkylakeX with AVX-512 (F, CD, BW, DQ, VL), else Zen on AMD and
 * Haswell on others. OPENBLAS_CORETYPE set by the user is never changed, whatever its value. */
#ifndef WILDCPU_BLAS_CORE_H
#define WILDCPU_BLAS_CORE_H

#include <stddef.h>

/* The CPU's features the rule reads (and wino_gemm.c's choice of its kernel's width). */
typedef struct wc_cpu_features {
    int avx2_fma; /* AVX2 and FMA, with the OS saving the registers */
    int avx512;   /* AVX-512 F, CD, BW, DQ and VL */
    int amd;      /* vendor AMD */
} wc_cpu_features;

/* The core to use instead of `detected` (openblas_get_corename()) on a CPU with `f`, or NULL
 * where OpenBLAS's own choice stands. A pure function of its arguments. */
const char *wc_blas_core_better(const char *detected, const wc_cpu_features *f);

/* This CPU's features (all 0 where the compiler cannot tell). */
wc_cpu_features wc_cpu_features_here(void);

/* At the start of main, before MPI or threads: if OPENBLAS_CORETYPE is unset and
 * wc_blas_core_better names a core, sets it (and WILDCPU_OPENBLAS_DETECTED to the core OpenBLAS
 * chose) and executes this program again with the same arguments; returns only where nothing is
 * to be done or the execution failed (then with a warning on stderr, running on OpenBLAS's
 * choice). */
void wc_blas_core_settle(char *const argv[]);

/* OpenBLAS starts its threads as it loads, before main: as many as the CPUs it sees (less one),
 * unless OPENBLAS_NUM_THREADS says otherwise (or, without it, GOTO_NUM_THREADS or
 * OMP_NUM_THREADS, which the 1 set here therefore overrides for OpenBLAS alone). wildcpu
 * never lets them compute (it calls OpenBLAS from its own threads, at 1 thread each), so on a
 * node of 128 CPUs each rank would hold 127 idle threads and their work buffers; and under an
 * address-space limit (ulimit -v) that cannot hold those buffers, OpenBLAS retries the failed
 * mapping for ever while it loads: the program hangs before its first line (seen at 300 MB on
 * 2 CPUs). Called from the program's .preinit_array, which runs before any library's
 * initializer: where OPENBLAS_NUM_THREADS is not in envp, executes this program again with
 * OPENBLAS_NUM_THREADS=1 added (nothing to allocate or print yet: the C library itself is not
 * initialized), or with OPENBLAS_NUM_THREADS=1 in place of a value OpenBLAS reads as none
 * (empty, 0, a word: it then falls back to the others, then to a thread per CPU). Returns where
 * the variable is set to a count OpenBLAS takes (the user's value stands), under valgrind (which
 * would not follow the execution), or where the execution failed (OpenBLAS then loads as it would
 * have). */
void wc_blas_threads_settle(char *const argv[], char *const envp[]);

/* How the running core was chosen, for logs and reports: "OpenBLAS" (its own detection),
 * "OPENBLAS_CORETYPE" (the user's), or "wildcpu, OpenBLAS detected <core>" into buf; returns
 * buf. */
const char *wc_blas_core_origin(char *buf, size_t size);

#endif
