/* bench.c: `make bench`: single-process training throughput of unet-lite against the machine's
 * sgemm peak, measured in the same run (these machines are shared and noisy: only ratios
 * within one run mean much).
 *
 *   build/tools/bench [--threads T] [--batch B] [--micro-batch M] [--bands C] [--patch P]
 *                     [--seconds S] [--reps R]
 *
 * Prints the median samples/s over R timed repetitions of S seconds each, the achieved
 * GFLOP/s (the network's own count, 2.80 GFLOP per 12x64x64 sample per step), a 2048^3 sgemm's
 * GFLOP/s on the same threads, their ratio, and the peak RSS. A step here is what training does:
 * micro-batches forward, loss, backward, gradient accumulation, one AdamW update. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/layers.h"
#include "wildcpu/net.h"
#include "wildcpu/optim.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double sgemm_gflops(int n, double seconds) {
    float *a = WC_ALLOC(sizeof(float) * n * n), *b = WC_ALLOC(sizeof(float) * n * n),
          *c = WC_ALLOC(sizeof(float) * n * n);
    wc_rng r;
    wc_rng_seed(&r, 1, 77, 0);
    for (long i = 0; i < (long)n * n; i++) a[i] = (float)wc_rng_uniform(&r), b[i] = (float)wc_rng_uniform(&r);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    int reps = 0;
    double t0 = wc_now(), dt;
    do {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        reps++;
        dt = wc_now() - t0;
    } while (dt < seconds);
    free(a), free(b), free(c);
    return 2.0 * n * (double)n * n * reps / dt / 1e9;
}

int main(int argc, char **argv) {
    int threads = 1, batch = 16, micro = 16, bands = 12, patch = 64, reps = 5;
    double seconds = 3.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--micro-batch")) micro = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--bands")) bands = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--patch")) patch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (micro > batch) micro = batch;
    openblas_set_num_threads(threads);
    wc_net *net = wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), bands, micro, patch,
                                patch, WC_NET_TRAIN);
    if (!net) return 1;
    wc_net_init_params(net, 1, 0.05);
    wc_optim_config oc;
    wc_optim_config_default(&oc, WC_OPTIM_ADAMW);
    oc.total_steps = 1000000;
    wc_optim *opt = wc_optim_create(&oc, net->nparams);
    const size_t pp = (size_t)patch * patch;
    float *x = WC_ALLOC(sizeof(float) * batch * bands * pp), *y = WC_ALLOC(sizeof(float) * batch * pp);
    uint8_t *valid = WC_ALLOC(batch * pp);
    float *acc = WC_CALLOC(net->nparams, sizeof(float));
    wc_rng r;
    wc_rng_seed(&r, 0, 78, 0);
    for (size_t i = 0; i < (size_t)batch * bands * pp; i++) x[i] = (float)wc_rng_normal(&r);
    for (size_t i = 0; i < (size_t)batch * pp; i++) y[i] = wc_rng_uniform(&r) < 0.05, valid[i] = 1;

    /* one training step over the batch, as train.c does it */
#define STEP()                                                                                     \
    do {                                                                                           \
        memset(acc, 0, net->nparams * sizeof(float));                                              \
        for (int m0 = 0; m0 < batch; m0 += micro) {                                                \
            int n = batch - m0 < micro ? batch - m0 : micro;                                       \
            memcpy(wc_net_input(net), x + (size_t)m0 * bands * pp, sizeof(float) * n * bands * pp); \
            wc_net_forward(net, n);                                                                \
            wc_bce_backward(wc_net_output_grad(net), wc_net_output(net), y + m0 * pp,              \
                            valid + m0 * pp, n * pp, 1.0f);                                        \
            memset(net->grads, 0, net->nparams * sizeof(float));                                   \
            wc_net_backward(net, n);                                                               \
            for (size_t i = 0; i < net->nparams; i++) acc[i] += net->grads[i];                     \
        }                                                                                          \
        wc_optim_step(opt, net->params, acc, net->tensors, net->ntensors);                         \
    } while (0)

    STEP(); /* warm-up: OpenBLAS buffers, page faults */
    STEP();
    double *rate = WC_ALLOC(sizeof(double) * reps);
    for (int k = 0; k < reps; k++) {
        int steps = 0;
        double t0 = wc_now(), dt;
        do {
            STEP();
            steps++;
            dt = wc_now() - t0;
        } while (dt < seconds || steps < 2);
        rate[k] = (double)steps * batch / dt;
    }
    qsort(rate, reps, sizeof(double), cmp_double);
    double sps = rate[reps / 2];
    double flops = 3.0 * net->flops_forward; /* forward + two backward GEMMs per layer */
    double gemm = sgemm_gflops(2048, seconds);
    double achieved = sps * flops / 1e9;
    printf("{\"impl\":\"wildcpu-%s\",\"threads\":%d,\"batch\":%d,\"micro_batch\":%d,"
           "\"samples_per_s\":%.3f,\"samples_per_s_min\":%.3f,\"samples_per_s_max\":%.3f,"
           "\"gflop_per_sample\":%.4f,\"gflops\":%.2f,\"sgemm_2048_gflops\":%.2f,"
           "\"fraction_of_sgemm\":%.3f,\"peak_rss_mb\":%.1f}\n",
           WC_VERSION, threads, batch, micro, sps, rate[0], rate[reps - 1], flops / 1e9, achieved,
           gemm, achieved / gemm, (double)wc_peak_rss_bytes() / 1048576.0);
    free(rate), free(x), free(y), free(valid), free(acc);
    wc_optim_destroy(opt);
    wc_net_destroy(net);
    return 0;
}
