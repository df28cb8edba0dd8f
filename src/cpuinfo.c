/* cpuinfo.c: the CPU model from /proc/cpuinfo (Linux; "unknown" elsewhere), SIMD extensions
 * from the compiler's CPU detection, and OpenBLAS's own description of itself. */
#include "wildcpu/cpuinfo.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "wildcpu/blas_core.h"
#include "wildcpu/util.h"
#include "wildcpu/winograd.h"

/* The first processor's "model name", "vendor_id", "cpu family" and "model" of /proc/cpuinfo. */
static void read_model(wc_cpuinfo *info) {
    snprintf(info->model, sizeof info->model, "unknown");
    snprintf(info->vendor, sizeof info->vendor, "unknown");
    info->family = info->model_number = -1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n') break; /* the first processor's block ends */
        char *v = strchr(line, ':');
        if (!v) continue;
        for (v++; *v == ' ' || *v == '\t'; v++) {
        }
        v[strcspn(v, "\n")] = '\0';
        if (strncmp(line, "model name", 10) == 0)
            snprintf(info->model, sizeof info->model, "%s", v);
        else if (strncmp(line, "vendor_id", 9) == 0)
            snprintf(info->vendor, sizeof info->vendor, "%s", v);
        else if (strncmp(line, "cpu family", 10) == 0)
            info->family = atoi(v);
        else if (strncmp(line, "model", 5) == 0 && (line[5] == '\t' || line[5] == ' '))
            info->model_number = atoi(v);
    }
    fclose(f);
}

static void read_isa(char *dst, size_t size) {
    dst[0] = '\0';
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    static const char *const names[] = {"sse4.2", "avx", "avx2", "fma", "avx512f"};
    const int have[] = {__builtin_cpu_supports("sse4.2"), __builtin_cpu_supports("avx"),
                        __builtin_cpu_supports("avx2"), __builtin_cpu_supports("fma"),
                        __builtin_cpu_supports("avx512f")};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (have[i]) {
            size_t len = strlen(dst);
            snprintf(dst + len, size - len, "%s%s", len ? " " : "", names[i]);
        }
#endif
    if (!dst[0]) snprintf(dst, size, "unknown");
}

void wc_cpuinfo_get(wc_cpuinfo *info) {
    memset(info, 0, sizeof *info);
    read_model(info);
    read_isa(info->isa, sizeof info->isa);
    const char *core = openblas_get_corename(), *config = openblas_get_config();
    snprintf(info->blas_core, sizeof info->blas_core, "%s", core ? core : "unknown");
    snprintf(info->blas_config, sizeof info->blas_config, "%s", config ? config : "unknown");
    /* the trailing space OpenBLAS leaves in its configuration string */
    size_t n = strlen(info->blas_config);
    while (n && info->blas_config[n - 1] == ' ') info->blas_config[--n] = '\0';
    wc_blas_core_origin(info->blas_core_origin, sizeof info->blas_core_origin);
    info->blas_threads = openblas_get_num_threads();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    info->online_cpus = cpus > 0 ? (int)cpus : 0;
    info->products = wc_wino_products_name();
}

const char *wc_cpuinfo_describe(char *buf, size_t size) {
    wc_cpuinfo c;
    wc_cpuinfo_get(&c);
    char id[96] = "";
    if (c.family >= 0 && c.model_number >= 0)
        snprintf(id, sizeof id, "%s family %d model %d; ", c.vendor, c.family, c.model_number);
    snprintf(buf, size,
             "CPU %s (%s%d online; %s), OpenBLAS %s (chosen by %s; %s), Winograd products %s",
             c.model, id, c.online_cpus, c.isa, c.blas_core, c.blas_core_origin, c.blas_config,
             c.products);
    return buf;
}

const char *wc_cpuinfo_kernels(char *buf, size_t size) {
    const char *core = openblas_get_corename(), *products = wc_wino_products_name();
    snprintf(buf, size, "openblas:%.40s/products:%s", core ? core : "unknown",
             strncmp(products, "own", 3) == 0 ? "own" : products);
    return buf;
}

void wc_cpuinfo_warn_ignored(void) {
    wc_cpuinfo c;
    wc_cpuinfo_get(&c);
    const char *set = getenv("OPENBLAS_CORETYPE"), *gemm = getenv("WILDCPU_GEMM");
    if (set && strcasecmp(set, c.blas_core) != 0 && strstr(c.blas_core_origin, "did not take"))
        wc_warn("OPENBLAS_CORETYPE=%s: OpenBLAS runs its %s kernels instead (a core it does not "
                "know, or one this CPU cannot run; OPENBLAS_VERBOSE=2 shows its choice)",
                set, c.blas_core);
    if (gemm && wc_wino_products_parse(gemm) < 0)
        wc_warn("WILDCPU_GEMM=%s is no choice (" WC_PRODUCTS_CHOICES "): the Winograd products "
                "are %s",
                gemm, c.products);
}

void wc_cpuinfo_json_members(wc_json *j) {
    wc_cpuinfo c;
    wc_cpuinfo_get(&c);
    wc_json_kstr(j, "cpu_model", c.model);
    wc_json_kstr(j, "cpu_vendor", c.vendor);
    if (c.family >= 0)
        wc_json_kint(j, "cpu_family", c.family);
    else
        wc_json_knum(j, "cpu_family", NAN); /* null */
    if (c.model_number >= 0)
        wc_json_kint(j, "cpu_model_number", c.model_number);
    else
        wc_json_knum(j, "cpu_model_number", NAN);
    wc_json_kstr(j, "cpu_isa", c.isa);
    wc_json_kstr(j, "openblas_core", c.blas_core);
    wc_json_kstr(j, "openblas_core_origin", c.blas_core_origin);
    wc_json_kstr(j, "openblas_config", c.blas_config);
    wc_json_kstr(j, "winograd_products", c.products);
    wc_json_kint(j, "online_cpus", c.online_cpus);
}
