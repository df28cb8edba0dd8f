/* blas_core.c: OpenBLAS's kernels fit for the CPU (blas_core.h says why and the rule). */
#include "wildcpu/blas_core.h"

#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

/* Marks a process this module executed again: the core OpenBLAS chose before it did. */
#define DETECTED_ENV "WILDCPU_OPENBLAS_DETECTED"

/* OpenBLAS's x86-64 cores with AVX2 kernels (names as openblas_get_corename() gives them). */
static int has_avx2_kernels(const char *core) {
    static const char *const cores[] = {"Haswell",        "Zen",      "SkylakeX", "Cooperlake",
                                        "SapphireRapids", "Excavator"};
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (strcasecmp(core, cores[i]) == 0) return 1;
    return 0;
}

const char *wc_blas_core_better(const char *detected, const wc_cpu_features *f) {
    if (!detected || !f->avx2_fma || has_avx2_kernels(detected)) return NULL;
    if (f->avx512) return "SkylakeX";
    return f->amd ? "Zen" : "Haswell";
}

wc_cpu_features wc_cpu_features_here(void) {
    wc_cpu_features f = {0, 0, 0};
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
    f.amd = __builtin_cpu_is("amd");
#endif
    return f;
}

void wc_blas_core_settle(char *const argv[]) {
    if (getenv("OPENBLAS_CORETYPE")) return; /* the user's choice, or ours already */
    const char *detected = openblas_get_corename();
    const wc_cpu_features f = wc_cpu_features_here();
    const char *better = wc_blas_core_better(detected, &f);
    if (!better) return;
    char was[32];
    snprintf(was, sizeof was, "%s", detected);
    if (setenv("OPENBLAS_CORETYPE", better, 1) != 0 || setenv(DETECTED_ENV, was, 1) != 0) return;
    /* the program's own path, not /proc/self/exe: the process's name (ps, top, pkill,
     * Slurm's accounting) comes from the path executed */
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        execv(self, argv);
    }
    const int err = n > 0 ? errno : ENOENT;
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(DETECTED_ENV);
    fprintf(stderr,
            "wildcpu: warning: OpenBLAS runs its %s kernels on this CPU, which has %s; could not "
            "start again with OPENBLAS_CORETYPE=%s (%s): set it in the environment to use them\n",
            was, f.avx512 ? "AVX-512" : "AVX2 and FMA", better, strerror(err));
}

/* Whether atoi(s), as OpenBLAS reads its variables, is above 0; written out, since the C library
 * is not initialized yet where wc_blas_threads_settle runs. */
static int atoi_positive(const char *s) {
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) s++;
    if (*s == '+') s++;
    while (*s == '0') s++;
    return *s >= '1' && *s <= '9';
}

void wc_blas_threads_settle(char *const argv[], char *const envp[]) {
    static const char key[] = "OPENBLAS_NUM_THREADS=", preload[] = "LD_PRELOAD=";
    static char one[] = "OPENBLAS_NUM_THREADS=1";
    enum { MAX_ENV = 1 << 16 }; /* its copy lives on the stack: malloc is not to be called yet */
    size_t n = 0, at = (size_t)-1;
    if (!argv || !envp) return;
    for (; envp[n]; n++) {
        /* a count OpenBLAS takes (it reads atoi's value) stands; one it reads as none (empty,
         * 0, a word) makes it fall back to GOTO_NUM_THREADS, OMP_NUM_THREADS, then a thread
         * per CPU, as if unset: that entry is replaced */
        if (strncmp(envp[n], key, sizeof key - 1) == 0) {
            if (atoi_positive(envp[n] + sizeof key - 1)) return;
            at = n;
        }
        /* under valgrind (its preloads): the program executed again would run outside it */
        if (strncmp(envp[n], preload, sizeof preload - 1) == 0 && strstr(envp[n], "vgpreload"))
            return;
    }
    if (n + 2 > MAX_ENV) return;
    /* the program's own path (wc_blas_core_settle says why); without /proc, the path it was
     * executed by, which the unchanged working directory still resolves */
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    const char *path = self;
    if (len > 0 && len < (ssize_t)sizeof self - 1)
        self[len] = '\0';
    else if (!(path = (const char *)getauxval(AT_EXECFN)))
        return;
    char *env[n + 2];
    memcpy(env, envp, n * sizeof *env);
    /* in place of the value OpenBLAS ignores: getenv would find that first */
    if (at != (size_t)-1) {
        env[at] = one;
        env[n] = NULL;
    } else {
        env[n] = one;
        env[n + 1] = NULL;
    }
    execve(path, argv, env); /* failed (a binary replaced on disk): OpenBLAS loads as it would */
}

const char *wc_blas_core_origin(char *buf, size_t size) {
    const char *set = getenv("OPENBLAS_CORETYPE"), *detected = getenv(DETECTED_ENV);
    const char *core = openblas_get_corename();
    if (set && detected && core && strcasecmp(set, core) == 0)
        snprintf(buf, size, "wildcpu, OpenBLAS detected %s", detected);
    else if (set && core && strcasecmp(set, core) != 0)
        snprintf(buf, size, "OpenBLAS, which did not take OPENBLAS_CORETYPE=%.40s", set);
    else if (set)
        snprintf(buf, size, "OPENBLAS_CORETYPE");
    else
        snprintf(buf, size, "OpenBLAS");
    return buf;
}
