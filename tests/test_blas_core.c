/* test_blas_core.c: OpenBLAS's kernels fit for the CPU (blas_core.h). The rule on a table of
 * cores and CPUs; then the mechanism itself, in this program run again as a child: with
 * OPENBLAS_CORETYPE set it is left alone, without it the core that runs is one the rule accepts
 * for this CPU (on a CPU OpenBLAS does not recognize, the child executed itself again, keeping
 * its name). */
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wildcpu/blas_core.h"

static const char *str(const char *s) {
    return s ? s : "(none)";
}

static void test_the_rule_replaces_only_a_fallback_core(void) {
    const wc_cpu_features avx512 = {1, 1, 0}, avx2_intel = {1, 0, 0}, avx2_amd = {1, 0, 1},
                          zen4 = {1, 1, 1}, old = {0, 0, 0};
    const struct {
        const char *detected;
        const wc_cpu_features *cpu;
        const char *want;
    } cases[] = {
        {"Prescott", &avx512, "SkylakeX"}, /* Debian 12's 0.3.21 on family 6 model 207 */
        {"Prescott", &avx2_intel, "Haswell"},
        {"Nehalem", &avx2_amd, "Zen"},
        {"Sandybridge", &avx512, "SkylakeX"}, /* AVX but not AVX2 kernels */
        {"Prescott", &zen4, "SkylakeX"},
        {"Haswell", &avx512, NULL}, /* OpenBLAS's own choice among AVX2 kernels stands */
        {"Zen", &zen4, NULL},
        {"SKYLAKEX", &avx512, NULL}, /* names compare without case */
        {"Cooperlake", &avx512, NULL},
        {"Prescott", &old, NULL}, /* a CPU without AVX2: nothing better to run */
        {NULL, &avx512, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = wc_blas_core_better(cases[i].detected, cases[i].cpu);
        const int same =
            got && cases[i].want ? strcmp(got, cases[i].want) == 0 : got == cases[i].want;
        CHECK(same, "case %zu: %s on avx2_fma=%d avx512=%d amd=%d gave %s, want %s", i,
              str(cases[i].detected), cases[i].cpu->avx2_fma, cases[i].cpu->avx512,
              cases[i].cpu->amd, str(got), str(cases[i].want));
    }
}

/* Runs this program as `ENV... exe --print-core`; its line "core|origin|process name" into
 * out. */
static int child_core(const char *env, char *out, size_t size) {
    char exe[4096], cmd[8192];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    snprintf(cmd, sizeof cmd, "env -u WILDCPU_OPENBLAS_DETECTED %s '%s' --print-core", env, exe);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    out[0] = '\0';
    if (!fgets(out, (int)size, p)) out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return pclose(p);
}

static void test_a_set_coretype_is_left_alone(void) {
    const char *config = openblas_get_config();
    if (!config || !strstr(config, "DYNAMIC_ARCH")) {
        NOTE("OpenBLAS without DYNAMIC_ARCH (%s): it has one core, nothing to choose", str(config));
        return;
    }
    char line[256];
    int status = child_core("OPENBLAS_CORETYPE=Prescott", line, sizeof line);
    CHECK(status == 0 && strcmp(line, "Prescott|OPENBLAS_CORETYPE|test_blas_core") == 0,
          "with OPENBLAS_CORETYPE=Prescott the child ran '%s' (status %d)", line, status);
}

static void test_without_coretype_the_core_fits_the_cpu(void) {
    if (getenv("OPENBLAS_CORETYPE") && !getenv("WILDCPU_OPENBLAS_DETECTED"))
        NOTE("OPENBLAS_CORETYPE=%s is set here; the child runs without it",
             getenv("OPENBLAS_CORETYPE"));
    char line[256];
    int status = child_core("-u OPENBLAS_CORETYPE", line, sizeof line);
    char *bar = strchr(line, '|');
    CHECK(status == 0 && bar, "the child printed '%s' (status %d)", line, status);
    if (!bar) return;
    *bar = '\0';
    const char *core = line, *origin = bar + 1;
    char *name = strchr(origin, '|');
    CHECK(name && strcmp(name + 1, "test_blas_core") == 0,
          "the process is called '%s' after choosing the core (ps, pkill and Slurm read it)",
          name ? name + 1 : "(none)");
    if (name) *name = '\0';
    const wc_cpu_features here = wc_cpu_features_here();
    NOTE("this CPU: avx2_fma=%d avx512=%d amd=%d; core %s, chosen by %s", here.avx2_fma,
         here.avx512, here.amd, core, origin);
    CHECK(wc_blas_core_better(core, &here) == NULL, "core %s still runs on a CPU the rule gives %s",
          core, str(wc_blas_core_better(core, &here)));
    const char *prefix = "wildcpu, OpenBLAS detected ";
    if (strncmp(origin, prefix, strlen(prefix)) == 0)
        CHECK(wc_blas_core_better(origin + strlen(prefix), &here) != NULL,
              "wildcpu replaced %s, which the rule keeps", origin + strlen(prefix));
    else
        CHECK(strcmp(origin, "OpenBLAS") == 0, "origin '%s'", origin);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--print-core") == 0) {
        wc_blas_core_settle(argv);
        char origin[64], comm[64] = "";
        FILE *f = fopen("/proc/self/comm", "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
            fclose(f);
        }
        comm[strcspn(comm, "\n")] = '\0';
        printf("%s|%s|%s\n", openblas_get_corename(), wc_blas_core_origin(origin, sizeof origin),
               comm);
        return 0;
    }
    RUN(test_the_rule_replaces_only_a_fallback_core);
    RUN(test_a_set_coretype_is_left_alone);
    RUN(test_without_coretype_the_core_fits_the_cpu);
    HARNESS_EXIT();
}
