/* bench.c: training throughput of unet-lite against the machine's sgemm peak, measured in the
 * same run (these machines are shared and noisy: only ratios within one run mean much).
 * tools/bench.sh (`make bench`) runs it beside the PyTorch peer and summarizes.
 *
 *   build/tools/bench [--threads T] [--batch B] [--micro-batch M] [--bands C] [--patch P]
 *                     [--seconds S] [--reps R] [--no-sgemm] [--mpi]
 *   mpirun -np 2 build/tools/bench --mpi ...     B samples per rank, like torch_ref.py ddp
 *
 * Prints one JSON line: the median samples/s over R timed repetitions of S seconds each (and
 * their range), the achieved GFLOP/s (the network's own direct-convolution count, 2.80 GFLOP
 * per 12x64x64 sample per step: "nominal", since Winograd needs fewer multiplies), a 2048^3
 * sgemm's GFLOP/s on one core, their ratio, the peak RSS, the CPU model and OpenBLAS's core.
 * A step here is what training does: micro-batches forward, loss, backward, each added to the
 * exact reducer (across ranks with --mpi), one AdamW update. The network runs on T threads of
 * its own (OpenBLAS at one). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/blas_core.h"
#include "wildcpu/cpuinfo.h"
#include "wildcpu/dist.h"
#include "wildcpu/layers.h"
#include "wildcpu/net.h"
#include "wildcpu/optim.h"
#include "wildcpu/reduce.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* GFLOP/s of n^3 sgemm on one thread: the best of a few repetitions within `seconds`. */
static double sgemm_gflops(int n, double seconds) {
    float *a = WC_ALLOC(sizeof(float) * n * n), *b = WC_ALLOC(sizeof(float) * n * n),
          *c = WC_ALLOC(sizeof(float) * n * n);
    wc_rng r;
    wc_rng_seed(&r, 1, 77, 0);
    for (long i = 0; i < (long)n * n; i++)
        a[i] = (float)wc_rng_uniform(&r), b[i] = (float)wc_rng_uniform(&r);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    double best = 1e30, t_end = wc_now() + seconds;
    do {
        double t0 = wc_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        best = WC_MIN(best, wc_now() - t0);
    } while (wc_now() < t_end);
    free(a), free(b), free(c);
    return 2.0 * n * (double)n * n / best / 1e9;
}

int main(int argc, char **argv) {
    int threads = 1, batch = 16, micro = 16, bands = 12, patch = 64, reps = 5, sgemm = 1, mpi = 0;
    double seconds = 3.0;
    wc_blas_core_settle(argv); /* what wildcpu itself runs on (blas_core.h) */
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--no-sgemm"))
            sgemm = 0;
        else if (!strcmp(o, "--mpi"))
            mpi = 1;
        else if (!v) {
            fprintf(stderr, "bench: %s needs a value\n", o);
            return 2;
        } else if (!strcmp(o, "--threads"))
            threads = atoi(v), i++;
        else if (!strcmp(o, "--batch"))
            batch = atoi(v), i++;
        else if (!strcmp(o, "--micro-batch"))
            micro = atoi(v), i++;
        else if (!strcmp(o, "--bands"))
            bands = atoi(v), i++;
        else if (!strcmp(o, "--patch"))
            patch = atoi(v), i++;
        else if (!strcmp(o, "--seconds"))
            seconds = atof(v), i++;
        else if (!strcmp(o, "--reps"))
            reps = atoi(v), i++;
        else {
            fprintf(stderr, "bench: unknown option %s\n", o);
            return 2;
        }
    }
    if (mpi && wc_dist_init(&argc, &argv) != WC_OK) return 1;
    const int rank = wc_dist_rank(), nranks = wc_dist_size();
    if (micro > batch) micro = batch;
    if (reps < 1) reps = 1;
    wc_net_set_threads(threads);
    wc_net *net = wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), bands, micro, patch,
                                patch, WC_NET_TRAIN);
    if (!net) return 1;
    wc_net_init_params(net, 1, 0.05);
    wc_optim_config oc;
    wc_optim_config_default(&oc, WC_OPTIM_ADAMW);
    oc.total_steps = 1000000;
    wc_optim *opt = wc_optim_create(&oc, net->nparams);
    const int nmicro = (batch + micro - 1) / micro;
    wc_reducer *red = wc_reducer_create(net, 1, nmicro * nranks);
    const size_t pp = (size_t)patch * patch;
    float *x = WC_ALLOC(sizeof(float) * batch * bands * pp),
          *y = WC_ALLOC(sizeof(float) * batch * pp);
    uint8_t *valid = WC_ALLOC(batch * pp);
    wc_rng r;
    wc_rng_seed(&r, 0, 78, (uint64_t)rank);
    for (size_t i = 0; i < (size_t)batch * bands * pp; i++) x[i] = (float)wc_rng_normal(&r);
    for (size_t i = 0; i < (size_t)batch * pp; i++) y[i] = wc_rng_uniform(&r) < 0.05, valid[i] = 1;

        /* one training step over this rank's batch, as train.c does it */
#define STEP()                                                                                     \
    do {                                                                                           \
        wc_step_totals tot;                                                                        \
        do {                                                                                       \
            wc_reducer_begin(red);                                                                 \
            for (int m0 = 0; m0 < batch; m0 += micro) {                                            \
                int n = batch - m0 < micro ? batch - m0 : micro;                                   \
                memcpy(wc_net_input(net), x + (size_t)m0 * bands * pp,                             \
                       sizeof(float) * n * bands * pp);                                            \
                wc_net_forward(net, n);                                                            \
                double loss = wc_bce_forward(wc_net_output(net), y + m0 * pp, valid + m0 * pp,     \
                                             n * pp, 1.0f);                                        \
                wc_bce_backward(wc_net_output_grad(net), wc_net_output(net), y + m0 * pp,          \
                                valid + m0 * pp, n * pp, 1.0f);                                    \
                memset(net->grads, 0, net->nparams * sizeof(float));                               \
                wc_net_backward(net, n);                                                           \
                if (!red->calibrated) wc_reducer_calibrate(red, rank == 0 ? net->grads : NULL, 0); \
                wc_reducer_add(red, net->grads, loss, (int64_t)n *pp, n);                          \
            }                                                                                      \
        } while (wc_reducer_finish(red, net->grads, 0, 0, &tot) == WC_REDUCE_REDO);                \
        wc_optim_step(opt, net->params, net->grads, net->tensors, net->ntensors);                  \
    } while (0)

    STEP(); /* warm-up: OpenBLAS buffers, page faults, the reducer's scales */
    STEP();
    double *rate = WC_ALLOC(sizeof(double) * reps);
    for (int k = 0; k < reps; k++) {
        if (mpi) wc_dist_barrier();
        int steps = 0;
        double t0 = wc_now(), dt, t_end = t0 + seconds;
        do { /* every rank runs the same number of steps (rank 0's clock decides) */
            STEP();
            steps++;
            int more = rank == 0 && (wc_now() < t_end || steps < 2);
            if (mpi) more = wc_dist_any(more);
            if (!more) break;
        } while (1);
        dt = wc_now() - t0;
        rate[k] = (double)steps * batch * nranks / dt;
    }
    qsort(rate, reps, sizeof(double), cmp_double);
    const double sps = rate[reps / 2];
    const double flops = 3.0 * net->flops_forward; /* forward + two backward products per layer */
    /* the training's peak, read before the sgemm's three 16 MiB matrices raise it */
    double rss = (double)wc_peak_rss_bytes() / 1048576.0;
    const double gemm = sgemm && rank == 0 ? sgemm_gflops(2048, WC_MIN(seconds, 3.0)) : 0.0;
    const double achieved = sps * flops / 1e9;
    if (mpi) wc_dist_max_f64(&rss, 1);
    if (rank == 0) {
        wc_json j;
        wc_json_init(&j);
        wc_json_object(&j);
        char impl[64];
        snprintf(impl, sizeof impl, "wildcpu-%s", WC_VERSION);
        wc_json_kstr(&j, "impl", impl);
        wc_json_kint(&j, "threads", threads);
        wc_json_kint(&j, "ranks", nranks);
        wc_json_kint(&j, "batch_per_rank", batch);
        wc_json_kint(&j, "micro_batch", micro);
        wc_json_knum(&j, "samples_per_s", sps);
        wc_json_knum(&j, "samples_per_s_min", rate[0]);
        wc_json_knum(&j, "samples_per_s_max", rate[reps - 1]);
        wc_json_knum(&j, "gflop_per_sample", flops / 1e9);
        wc_json_knum(&j, "gflops_nominal", achieved);
        wc_json_knum(&j, "sgemm_2048_gflops_1thread", gemm);
        wc_json_knum(&j, "nominal_over_sgemm_peak",
                     gemm > 0 ? achieved / (gemm * threads * nranks) : 0.0);
        wc_json_knum(&j, "peak_rss_mb", rss);
        wc_cpuinfo_json_members(&j);
        wc_json_end(&j);
        printf("%s\n", wc_json_text(&j));
        wc_json_free(&j);
        fflush(stdout);
    }
    free(rate), free(x), free(y), free(valid);
    wc_reducer_destroy(red);
    wc_optim_destroy(opt);
    wc_net_destroy(net);
    if (mpi) wc_dist_finalize();
    return 0;
}
