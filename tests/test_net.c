/* test_net.c: the network as a whole.
 *
 *   - unet-lite has the reference's parameter count (474,145 for 12 bands) and FLOPs;
 *   - the optimized forward equals a naive double-precision execution of the same graph;
 *   - the whole network's parameter gradient equals central finite differences of that double
 *     execution (small steps in double, so ReLU/max kinks are almost never crossed; a
 *     coordinate where two step sizes disagree is reported as a kink and skipped, and there
 *     must be few of those);
 *   - the receptive field it reports is conservative: an input change beyond it leaves the
 *     output pixel bit-identical;
 *   - forward and backward allocate nothing (heap statistics unchanged over a step), on one
 *     thread and on three;
 *   - training on 2 or 3 threads gives parameters bitwise equal to 1 thread's after 3 steps,
 *     and inference on 2 threads the training network's outputs;
 *   - graphs whose buffers plan differently (concatenation views of views, a tensor
 *     concatenated with itself, a view read after its concatenation, a dead branch) have
 *     gradients equal to finite differences;
 *   - random graphs (800 specs of convolutions, ReLUs, pooling, upsampling, concatenations):
 *     forward equal to the naive execution, gradient to finite differences, 2 threads and the
 *     inference plan bitwise equal to training on 1 thread; a failing spec is printed;
 *   - bad specs are refused with a message, not a crash: each limit of the spec language, odd
 *     characters and names, repeated options, sizes that would overflow (channels, upsampling,
 *     weights, activations, coordinates, the receptive field), and networks beyond the memory
 *     limit (named by layer, refused before anything large is allocated). */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wildcpu/blas_core.h"
#include "wildcpu/layers.h"
#include "wildcpu/net.h"
#include "wildcpu/optim.h"
#include "wildcpu/reduce.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

/* ---- naive double-precision execution of a wc_net graph ----------------------------------- */

typedef struct {
    double **out; /* per node, (N, C, H, W) */
} ref_exec;

static void ref_forward(ref_exec *e, const wc_net *net, const double *params, const float *x,
                        int N) {
    for (int i = 0; i < net->nnodes; i++) {
        const wc_node *nd = &net->nodes[i];
        size_t n = (size_t)N * nd->C * nd->H * nd->W;
        double *o = e->out[i];
        const wc_node *a = nd->in[0] >= 0 ? &net->nodes[nd->in[0]] : NULL;
        const double *ai = a ? e->out[nd->in[0]] : NULL;
        switch (nd->op) {
        case WC_OP_INPUT:
            for (size_t j = 0; j < n; j++) o[j] = x[j];
            break;
        case WC_OP_CONV: {
            const wc_conv_shape *s = &nd->shape;
            const double *w = params + nd->w_off, *b = params + nd->b_off;
            for (int s_ = 0; s_ < N; s_++)
                for (int k = 0; k < s->K; k++)
                    for (int oy = 0; oy < s->OH; oy++)
                        for (int ox = 0; ox < s->OW; ox++) {
                            double acc = b[k];
                            for (int c = 0; c < s->C; c++)
                                for (int ky = 0; ky < s->KH; ky++)
                                    for (int kx = 0; kx < s->KW; kx++) {
                                        int iy = oy * s->stride + ky - s->pad;
                                        int ix = ox * s->stride + kx - s->pad;
                                        if (iy < 0 || iy >= s->H || ix < 0 || ix >= s->W) continue;
                                        acc +=
                                            w[((k * s->C + c) * s->KH + ky) * s->KW + kx] *
                                            ai[((size_t)(s_ * s->C + c) * s->H + iy) * s->W + ix];
                                    }
                            o[((size_t)(s_ * s->K + k) * s->OH + oy) * s->OW + ox] = acc;
                        }
            break;
        }
        case WC_OP_RELU:
            for (size_t j = 0; j < n; j++) o[j] = ai[j] > 0 ? ai[j] : 0;
            break;
        case WC_OP_MAXPOOL:
            for (int p = 0; p < N * nd->C; p++)
                for (int y = 0; y < nd->H; y++)
                    for (int x_ = 0; x_ < nd->W; x_++) {
                        const double *pl = ai + (size_t)p * a->H * a->W;
                        double m = pl[(2 * y) * a->W + 2 * x_];
                        m = fmax(m, pl[(2 * y) * a->W + 2 * x_ + 1]);
                        m = fmax(m, pl[(2 * y + 1) * a->W + 2 * x_]);
                        m = fmax(m, pl[(2 * y + 1) * a->W + 2 * x_ + 1]);
                        o[((size_t)p * nd->H + y) * nd->W + x_] = m;
                    }
            break;
        case WC_OP_UPSAMPLE:
            for (int p = 0; p < N * nd->C; p++)
                for (int y = 0; y < nd->H; y++)
                    for (int x_ = 0; x_ < nd->W; x_++)
                        o[((size_t)p * nd->H + y) * nd->W + x_] =
                            ai[((size_t)p * a->H + y / 2) * a->W + x_ / 2];
            break;
        case WC_OP_CONCAT: {
            const wc_node *b = &net->nodes[nd->in[1]];
            const double *bi = e->out[nd->in[1]];
            size_t hw = (size_t)nd->H * nd->W;
            for (int s_ = 0; s_ < N; s_++)
                for (int c = 0; c < nd->C; c++)
                    for (size_t j = 0; j < hw; j++)
                        o[((size_t)s_ * nd->C + c) * hw + j] =
                            c < a->C ? ai[((size_t)s_ * a->C + c) * hw + j]
                                     : bi[((size_t)s_ * b->C + c - a->C) * hw + j];
            break;
        }
        }
    }
}

static ref_exec ref_create(const wc_net *net, int N) {
    ref_exec e;
    e.out = WC_CALLOC(net->nnodes, sizeof(double *));
    for (int i = 0; i < net->nnodes; i++) {
        const wc_node *nd = &net->nodes[i];
        e.out[i] = WC_CALLOC((size_t)N * nd->C * nd->H * nd->W, sizeof(double));
    }
    return e;
}

static void ref_destroy(ref_exec *e, const wc_net *net) {
    for (int i = 0; i < net->nnodes; i++) free(e->out[i]);
    free(e->out);
}

static double ref_loss(ref_exec *e, const wc_net *net, const double *params, const float *x,
                       const float *y, const uint8_t *valid, int N, float pw) {
    ref_forward(e, net, params, x, N);
    const double *z = e->out[net->nnodes - 1];
    double sum = 0;
    for (size_t i = 0; i < (size_t)N * net->H * net->W; i++)
        if (valid[i]) sum += wc_bce_pixel(z[i], y[i], pw);
    return sum;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_unet_lite_matches_reference_size(void) {
    wc_net *net =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), 12, 4, 64, 64, WC_NET_TRAIN);
    CHECK(net != NULL, "unet-lite did not build");
    if (!net) return;
    CHECK(net->nparams == 474145, "parameter count %zu, reference 474145", net->nparams);
    NOTE("unet-lite: %zu parameters, %.4f GFLOP forward per 64x64 sample", net->nparams,
         net->flops_forward / 1e9);
    /* torch_ref.py: about 0.934 GFLOP forward (its count adds the 1x1 head) */
    CHECK(fabs(net->flops_forward / 1e9 - 0.934) < 0.002, "forward FLOPs %.4g",
          net->flops_forward / 1e9);
    CHECK(net->ntensors == 22, "%d tensors", net->ntensors);
    const wc_tensor *t = wc_net_find_tensor(net, "d2.0.weight");
    CHECK(t && t->shape[0] == 64 && t->shape[1] == 192 && t->shape[2] == 3 && t->shape[3] == 3,
          "d2.0.weight shape (expect 64,192,3,3: concat of 128 upsampled + 64 skip)");
    t = wc_net_find_tensor(net, "h.weight");
    CHECK(t && t->shape[0] == 1 && t->shape[1] == 32 && t->shape[2] == 1, "h.weight shape");
    int radius, align;
    wc_net_receptive_field(net, &radius, &align);
    NOTE("receptive field radius %d px, alignment %d", radius, align);
    CHECK(align == 4, "alignment %d", align);
    wc_net_destroy(net);

    net = wc_net_create("logistic", wc_net_builtin_spec("logistic"), 12, 4, 64, 64, WC_NET_TRAIN);
    CHECK(net && net->nparams == 13, "logistic has %zu parameters", net ? net->nparams : 0);
    wc_net_destroy(net);
}

/* A spec whose output passes through a relu (directly, or through a max-pool and an upsample)
 * is refused for training (wc_net_check_output), but it builds: a checkpoint of one, trained
 * before training refused them, must still load and map rather than be called "INVALID: its
 * network spec does not build" by info, predict and a resume (the refusal sat in the shapes,
 * which every load computes). */
static void test_relu_output_refused_for_training_only(void) {
    static const char *const relu_out[] = {
        "input x\nconv c x out=1 k=3 pad=1\nrelu r c\n",
        "input x\nconv c x out=1 k=1\nrelu r c\nmaxpool p r\nupsample u p\n",
    };
    const int was = wc_log_set_quiet(2);
    for (int i = 0; i < 2; i++) {
        wc_net_facts f;
        CHECK(wc_net_describe("relu-out", relu_out[i], 3, 32, 32, &f) == WC_OK,
              "spec %d: a relu output must still describe", i);
        wc_net *net = wc_net_create("relu-out", relu_out[i], 3, 2, 32, 32, WC_NET_INFER);
        CHECK(net != NULL, "spec %d: a checkpoint's relu output must still build", i);
        wc_net_destroy(net);
        CHECK(wc_net_check_output("relu-out", relu_out[i]) == WC_ERR,
              "spec %d: a relu output must be refused for training", i);
    }
    CHECK(wc_net_check_output(
              "conv-out", "input x\nconv c x out=3 k=1\nrelu r c\nconv h r out=1 k=1\n") == WC_OK,
          "a conv output after a relu is fine");
    wc_log_set_quiet(was);
}

typedef struct {
    wc_net *net;
    float *x, *y;
    uint8_t *valid;
    int N;
} tiny_problem;

/* unet-lite's graph at width 4 instead of 32: the same layers, pooling, concatenations and
 * in-place ReLUs, at a size the naive double-precision reference can differentiate quickly. */
static char narrow_unet_spec[4096];

static const char *const GRAPH_SPECS[];

static const char *spec_for(const char *arch) {
    if (strncmp(arch, "graph", 5) == 0) return GRAPH_SPECS[atoi(arch + 5)];
    if (strcmp(arch, "unet-narrow") != 0) return wc_net_builtin_spec(arch);
    const char *src = wc_net_builtin_spec("unet-lite");
    char *d = narrow_unet_spec;
    while (*src) {
        int skip = 0;
        if (strncmp(src, "out=32 ", 7) == 0)
            d += sprintf(d, "out=4  "), skip = 7;
        else if (strncmp(src, "out=64 ", 7) == 0)
            d += sprintf(d, "out=8  "), skip = 7;
        else if (strncmp(src, "out=128", 7) == 0)
            d += sprintf(d, "out=16 "), skip = 7;
        if (skip)
            src += skip;
        else
            *d++ = *src++;
    }
    *d = '\0';
    return narrow_unet_spec;
}

/* The problem of spec `spec` (named `name`): a training network with seeded weights, small
 * non-zero biases, a random input, labels and mask. Its net is NULL if the spec is refused. */
static tiny_problem tiny_make_spec(const char *name, const char *spec, int C, int N, int H, int W,
                                   uint64_t seed) {
    tiny_problem p = {0};
    p.N = N;
    p.net = wc_net_create(name, spec, C, N, H, W, WC_NET_TRAIN);
    if (!p.net) return p;
    wc_net_init_params(p.net, seed, 0.2);
    wc_rng r;
    wc_rng_seed(&r, seed, 500, 0);
    /* Small non-zero biases so that ReLU inputs are rarely near zero by construction. */
    for (int t = 0; t < p.net->ntensors; t++)
        if (!p.net->tensors[t].is_weight)
            for (size_t i = 0; i < p.net->tensors[t].count; i++)
                p.net->params[p.net->tensors[t].offset + i] = (float)(0.2 * wc_rng_normal(&r));
    size_t nx = (size_t)N * C * H * W, np = (size_t)N * H * W;
    p.x = WC_ALLOC(nx * 4), p.y = WC_ALLOC(np * 4), p.valid = WC_ALLOC(np);
    for (size_t i = 0; i < nx; i++) p.x[i] = (float)wc_rng_normal(&r);
    for (size_t i = 0; i < np; i++) {
        p.y[i] = wc_rng_uniform(&r) < 0.3;
        p.valid[i] = wc_rng_uniform(&r) < 0.85;
    }
    memcpy(wc_net_input(p.net), p.x, nx * 4);
    return p;
}

static tiny_problem tiny_make(const char *arch, int C, int N, int H, int W, uint64_t seed) {
    tiny_problem p = tiny_make_spec(arch, spec_for(arch), C, N, H, W, seed);
    WC_ASSERT(p.net);
    return p;
}

static void tiny_free(tiny_problem *p) {
    wc_net_destroy(p->net);
    free(p->x), free(p->y), free(p->valid);
}

static double *params_in_double(const wc_net *net) {
    double *pd = WC_ALLOC(net->nparams * sizeof(double));
    for (size_t i = 0; i < net->nparams; i++) pd[i] = net->params[i];
    return pd;
}

/* Runs p's network forward: the largest difference of its output from the naive double
 * execution's, relative to the largest output (or 1e-3). */
static double forward_rel_err(const tiny_problem *p) {
    wc_net *net = p->net;
    wc_net_forward(net, p->N);
    ref_exec e = ref_create(net, p->N);
    double *pd = params_in_double(net);
    ref_forward(&e, net, pd, p->x, p->N);
    const float *z = wc_net_output(net);
    const double *zr = e.out[net->nnodes - 1];
    double num = 0, den = 1e-3;
    for (size_t i = 0; i < (size_t)p->N * net->H * net->W; i++) {
        num = fmax(num, fabs(z[i] - zr[i]));
        den = fmax(den, fabs(zr[i]));
    }
    ref_destroy(&e, net);
    free(pd);
    return num / den;
}

static void test_forward_matches_naive_double(void) {
    tiny_problem p = tiny_make("unet-lite", 3, 2, 16, 12, 11);
    double err = forward_rel_err(&p);
    NOTE("unet-lite forward vs naive double: max rel err %.2e", err);
    CHECK(err < 1e-5, "forward differs from naive execution: %.3g", err);
    tiny_free(&p);
}

/* A step of p without the optimizer: forward, the loss (positives weighted pw), backward into
 * net->grads. */
static void tiny_step(const tiny_problem *p, float pw) {
    wc_net *net = p->net;
    wc_net_forward(net, p->N);
    wc_bce_backward(wc_net_output_grad(net), wc_net_output(net), p->y, p->valid,
                    (size_t)p->N * net->H * net->W, pw);
    memset(net->grads, 0, net->nparams * sizeof(float));
    wc_net_backward(net, p->N);
}

typedef struct {
    double worst, mean; /* relative errors of the coordinates checked */
    int checked, kinks; /* coordinates compared, and skipped at a kink */
} fd_check;

/* A step of p (tiny_step), then its gradient against central finite differences of the naive
 * double execution's loss, at per_tensor coordinates of every tensor (so each layer's gradient
 * is exercised). A coordinate where two step sizes disagree lies at a kink and is skipped. */
static fd_check gradient_vs_fd(const tiny_problem *p, float pw, int per_tensor) {
    wc_net *net = p->net;
    tiny_step(p, pw);
    ref_exec e = ref_create(net, p->N);
    double *pd = params_in_double(net);
    fd_check r = {0};
    for (int t = 0; t < net->ntensors; t++) {
        const wc_tensor *tn = &net->tensors[t];
        size_t stride = tn->count > (size_t)per_tensor ? tn->count / per_tensor : 1;
        for (size_t j = 0; j < tn->count; j += stride) {
            size_t i = tn->offset + j;
            double keep = pd[i], fd[2];
            for (int s = 0; s < 2; s++) {
                double h = s == 0 ? 1e-5 : 5e-6;
                pd[i] = keep + h;
                double lp = ref_loss(&e, net, pd, p->x, p->y, p->valid, p->N, pw);
                pd[i] = keep - h;
                double lm = ref_loss(&e, net, pd, p->x, p->y, p->valid, p->N, pw);
                pd[i] = keep;
                fd[s] = (lp - lm) / (2 * h);
            }
            if (rel_err(fd[0], fd[1], 1e-4) > 1e-4) {
                r.kinks++;
                continue;
            }
            double err = rel_err(net->grads[i], fd[0], 1e-2);
            r.worst = fmax(r.worst, err);
            r.mean += err;
            r.checked++;
        }
    }
    r.mean /= WC_MAX(r.checked, 1);
    ref_destroy(&e, net);
    free(pd);
    return r;
}

static void check_network_gradient(const char *arch, int C, int N, int H, int W, float pw,
                                   int per_tensor) {
    tiny_problem p = tiny_make(arch, C, N, H, W, 21);
    fd_check r = gradient_vs_fd(&p, pw, per_tensor);
    NOTE("%s (C%d N%d %dx%d pos_weight %g): %d parameters checked, %d skipped at kinks, "
         "max rel err %.2e, mean %.2e",
         arch, C, N, H, W, pw, r.checked, r.kinks, r.worst, r.mean);
    CHECK(r.kinks <= r.checked / 20, "%d of %d coordinates at kinks", r.kinks, r.checked + r.kinks);
    CHECK(r.worst < 2e-3, "%s: gradient differs from finite differences by %.3g", arch, r.worst);
    tiny_free(&p);
}

static void test_network_gradient_finite_differences(void) {
    check_network_gradient("unet-narrow", 3, 2, 8, 8, 1.0f, 8);
    check_network_gradient("unet-narrow", 2, 1, 8, 12, 3.0f, 8);
    check_network_gradient("unet-lite", 3, 1, 8, 8, 1.0f, 1); /* full width, one per tensor */
    check_network_gradient("logistic", 4, 2, 5, 7, 1.0f, 8);
}

static void test_receptive_field_is_conservative(void) {
    const int S = 96;
    wc_net *net =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), 2, 1, S, S, WC_NET_INFER);
    wc_net_init_params(net, 5, 0.1);
    int radius, align;
    wc_net_receptive_field(net, &radius, &align);
    wc_rng r;
    wc_rng_seed(&r, 9, 501, 0);
    float *x = wc_net_input(net);
    for (size_t i = 0; i < (size_t)2 * S * S; i++) x[i] = (float)wc_rng_normal(&r);
    wc_net_forward(net, 1);
    const int cy = 48, cx = 48;
    float base = wc_net_output(net)[cy * S + cx];
    int changed_outside = 0, changed_inside = 0;
    /* Perturb single input pixels just outside and just inside the radius, in every direction. */
    const int dirs[8][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, 1}, {-1, -1}, {1, -1}, {-1, 1}};
    for (int d = 0; d < 8; d++) {
        for (int inside = 0; inside < 2; inside++) {
            int dist = inside ? 1 : radius + 1;
            int y = cy + dirs[d][0] * dist, xx = cx + dirs[d][1] * dist;
            float keep = x[y * S + xx];
            x[y * S + xx] = keep + 10.0f;
            wc_net_forward(net, 1);
            float v = wc_net_output(net)[cy * S + cx];
            x[y * S + xx] = keep;
            if (inside)
                changed_inside += v != base;
            else
                changed_outside += v != base;
        }
    }
    NOTE("radius %d: outside changes %d/8, inside changes %d/8", radius, changed_outside,
         changed_inside);
    CHECK(changed_outside == 0, "an input beyond the receptive field changed the output");
    CHECK(changed_inside > 0, "the probe is blind: nearby inputs changed nothing");
    wc_net_destroy(net);
}

/* Every allocation of the library (linked statically into this test) and of the test itself
 * goes through these wrappers (-Wl,--wrap, see the Makefile): a step that allocates is seen in
 * any build, also under ASan, where mallinfo2 reports nothing. */
static size_t allocations = 0;
static size_t largest_allocation = 0; /* bytes of the largest request since it was reset */
static size_t noted(size_t n) {
    return largest_allocation = WC_MAX(largest_allocation, n), n;
}
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n) {
    return allocations++, __real_malloc(noted(n));
}
void *__wrap_calloc(size_t n, size_t size) {
    noted(size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
    return allocations++, __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
    return allocations++, __real_realloc(p, noted(n));
}
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
    return allocations++, __real_posix_memalign(p, align, n);
}
void *__wrap_aligned_alloc(size_t align, size_t n) {
    return allocations++, __real_aligned_alloc(align, n);
}

/* One attempt at a step of p's 32x32 problem as train.c runs it: micro-batches of 3 and then
 * 2 samples (a smaller last one, same buffers), each forward, loss, backward and into the
 * reducer (calibrated on the first). The caller finishes the reduction. */
static void tiny_micro_batches(const tiny_problem *pp, wc_reducer *red) {
    const tiny_problem p = *pp;
    wc_reducer_begin(red);
    for (int j = 0; j < 2; j++) {
        const int n = j == 0 ? 3 : 2;
        wc_net_forward(p.net, n);
        double loss = wc_bce_forward(wc_net_output(p.net), p.y, p.valid, (size_t)n * 1024, 1.0f);
        wc_bce_backward(wc_net_output_grad(p.net), wc_net_output(p.net), p.y, p.valid,
                        (size_t)n * 1024, 1.0f);
        memset(p.net->grads, 0, p.net->nparams * sizeof(float));
        wc_net_backward(p.net, n);
        if (!red->calibrated && j == 0) wc_reducer_calibrate(red, p.net->grads, 0);
        wc_reducer_add(red, p.net->grads, loss, (int64_t)n * 1024, n);
    }
}

/* A whole training step, as train.c runs it: micro-batches through forward, loss, backward and
 * the exact reducer, then the optimizer. After the first step (which calibrates the reducer's
 * scales) nothing may be allocated. */
static void test_no_allocation_in_step(void) {
    tiny_problem p = tiny_make("unet-lite", 4, 3, 32, 32, 3);
    wc_reducer *red = wc_reducer_create(p.net, 1, 2);
    wc_optim_config oc;
    wc_optim_config_default(&oc, WC_OPTIM_ADAMW);
    oc.total_steps = 4;
    wc_optim *opt = wc_optim_create(&oc, p.net->nparams);
    const size_t before_all = allocations;
    for (int rep = 0; rep < 4; rep++) {
        const size_t before = allocations;
        for (;;) {
            tiny_micro_batches(&p, red);
            wc_step_totals tot;
            if (wc_reducer_finish(red, p.net->grads, 0, 0, &tot) == WC_REDUCE_DONE) break;
        }
        wc_optim_step(opt, p.net->params, p.net->grads, p.net->tensors, p.net->ntensors);
        if (rep > 0)
            CHECK(allocations == before, "step %d allocated %zu times", rep, allocations - before);
    }
    NOTE("%zu allocations in the first step (the reducer's calibration), 0 in the 3 after",
         allocations - before_all);
    CHECK(allocations > before_all, "the wrappers see allocations at all");
    wc_optim_destroy(opt);
    wc_reducer_destroy(red);
    tiny_free(&p);
}

/* ---- threads ------------------------------------------------------------------------------- */

/* Training steps on T threads: the parameters after them, bitwise. Micro-batches of 3 and 2
 * samples (a smaller last one), AdamW, the exact reducer, as train.c runs a step. */
static float *train_steps(int threads, int steps, size_t *nparams) {
    wc_net_set_threads(threads);
    tiny_problem p = tiny_make("unet-lite", 4, 3, 32, 32, 7);
    wc_net_set_threads(1);
    wc_reducer *red = wc_reducer_create(p.net, 1, 2);
    wc_optim_config oc;
    wc_optim_config_default(&oc, WC_OPTIM_ADAMW);
    oc.total_steps = steps;
    wc_optim *opt = wc_optim_create(&oc, p.net->nparams);
    for (int step = 0; step < steps; step++) {
        wc_step_totals tot;
        do {
            tiny_micro_batches(&p, red);
        } while (wc_reducer_finish(red, p.net->grads, 0, 0, &tot) == WC_REDUCE_REDO);
        wc_optim_step(opt, p.net->params, p.net->grads, p.net->tensors, p.net->ntensors);
    }
    *nparams = p.net->nparams;
    float *out = WC_ALLOC(p.net->nparams * sizeof(float));
    memcpy(out, p.net->params, p.net->nparams * sizeof(float));
    wc_optim_destroy(opt);
    wc_reducer_destroy(red);
    tiny_free(&p);
    return out;
}

/* Gives `in` the parameters of `tr` (seeded), the same random input (rng stream `stream`) to
 * both, runs both forward; whether their outputs are bitwise equal. */
static int same_forward(wc_net *tr, wc_net *in, int N, uint64_t stream) {
    const size_t nin = (size_t)N * tr->in_channels * tr->H * tr->W;
    wc_net_init_params(tr, 4, 0.1);
    memcpy(in->params, tr->params, tr->nparams * sizeof(float));
    wc_rng r;
    wc_rng_seed(&r, 3, stream, 0);
    for (size_t i = 0; i < nin; i++)
        wc_net_input(tr)[i] = wc_net_input(in)[i] = (float)wc_rng_normal(&r);
    wc_net_forward(tr, N);
    wc_net_forward(in, N);
    return memcmp(wc_net_output(tr), wc_net_output(in), sizeof(float) * N * tr->H * tr->W) == 0;
}

static void test_threads_bitwise(void) {
    const int steps = 3;
    size_t n1, n;
    float *ref = train_steps(1, steps, &n1);
    for (int threads = 2; threads <= 3; threads++) {
        float *got = train_steps(threads, steps, &n);
        size_t diff = 0;
        for (size_t i = 0; i < n; i++) diff += memcmp(&got[i], &ref[i], sizeof(float)) != 0;
        NOTE("%d threads: %zu of %zu parameters differ from 1 thread after %d steps", threads, diff,
             n, steps);
        CHECK(n == n1 && diff == 0, "%d threads: parameters not bitwise those of 1 thread",
              threads);
        free(got);
    }
    /* and the inference network on 2 threads gives the training network's outputs */
    const int C = 5, N = 2, H = 48, W = 40;
    wc_net *tr =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), C, N, H, W, WC_NET_TRAIN);
    wc_net_set_threads(2);
    wc_net *in =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), C, N, H, W, WC_NET_INFER);
    wc_net_set_threads(1);
    CHECK(same_forward(tr, in, N, 503), "inference on 2 threads differs from training on 1");
    wc_net_destroy(tr);
    wc_net_destroy(in);
    free(ref);
}

/* The step of test_no_allocation_in_step, on 3 threads (the pool's tasks allocate nothing
 * either, and neither does OpenBLAS called from them once warm). */
static void test_no_allocation_with_threads(void) {
    wc_net_set_threads(3);
    tiny_problem p = tiny_make("unet-lite", 4, 3, 32, 32, 3);
    wc_net_set_threads(1);
    for (int rep = 0; rep < 3; rep++) {
        const size_t before = allocations;
        wc_net_forward(p.net, 3);
        wc_bce_backward(wc_net_output_grad(p.net), wc_net_output(p.net), p.y, p.valid, 3 * 1024,
                        1.0f);
        memset(p.net->grads, 0, p.net->nparams * sizeof(float));
        wc_net_backward(p.net, 3);
        if (rep > 0)
            CHECK(allocations == before, "step %d on 3 threads allocated %zu times", rep,
                  allocations - before);
    }
    tiny_free(&p);
}

/* ---- graphs beyond unet-lite's ------------------------------------------------------------ */

/* Networks whose buffers plan differently: a tensor concatenated with itself, concatenations
 * of concatenations (views of views), a view whose gradient is contributed to before its
 * concatenation's (the buffer is then zeroed first), a ReLU read by two layers, a dead branch
 * (a node nobody reads), and a ReLU of the network input. Their gradients must equal finite
 * differences like unet-lite's. */
static const char *const GRAPH_SPECS[] = {
    /* concat of one tensor twice; nested concatenation; a ReLU with two readers */
    "input x\nconv a x out=3 k=3 pad=1\nrelu ar a\nconcat c1 ar ar\nconv b c1 out=2 k=3 pad=1\n"
    "relu br b\nconcat c2 c1 br\nconv d c2 out=3 k=3 pad=1\nrelu dr d\nconcat c3 dr ar\n"
    "conv h c3 out=1 k=1\n",
    /* a view read after its concatenation's reader (z reads e after c's reader q); a dead
     * branch (dead); a ReLU of the input; pooling and upsampling into a concatenation */
    "input x\nrelu xr x\nconv e xr out=3 k=3 pad=1\nrelu er e\nmaxpool p er\n"
    "conv f p out=2 k=3 pad=1\nupsample u f\nconcat c u er\nconv q c out=2 k=3 pad=1\n"
    "conv dead q out=2 k=1\nconv z er out=2 k=3 pad=1\nconcat c4 q z\nconv h c4 out=1 k=1\n",
    /* a ReLU fused into a lowered 5x5 convolution whose output is a view in a concatenation
     * (the ReLU must cover that layer's channels, not the concatenation's sample) */
    "input x\nconv b x out=3 k=3 pad=1\nconv m x out=2 k=5 pad=2\nrelu mr m\nconcat c mr b\n"
    "conv h c out=1 k=1\n",
    /* a ReLU of a concatenation whose viewed input (a) has another reader (d) */
    "input x\nconv a x out=2 k=3 pad=1\nconv b x out=2 k=3 pad=1\nconcat c a b\nrelu r c\n"
    "conv d a out=2 k=3 pad=1\nconcat e r d\nconv h e out=1 k=1\n",
    /* the same in a dead branch (n9): the input's concatenation (n4) holds a convolution's
     * input (n3), which that convolution's backward reads */
    "input x\nconcat n0 x x\nmaxpool n1 x\nconcat n2 n0 x\nupsample n3 n1\nconcat n4 n3 n2\n"
    "conv n5 n3 out=4 kh=2 kw=5 pad=0\nrelu n5r n5\nconv n6 n0 out=1 k=3 pad=1\nrelu n6r n6\n"
    "relu n9 n4\nconv h n6r out=1 k=1\n",
    /* a tensor concatenated with itself, copied twice (n6: n2 is a view in the dead n4): both
     * halves' gradients go to n2's planes, which the 2-thread backward split between tasks */
    "input x\nconv n0 x out=2 k=1\nrelu n0r n0\nconcat n2 n0r n0r\nrelu n3 n2\nconcat n4 n3 n2\n"
    "conv n5 n3 out=4 kh=3 kw=5 pad=1\nconcat n6 n2 n2\nconv h n6 out=1 k=1\n",
};

static void test_graph_plans(void) {
    wc_net *unet =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), 12, 2, 64, 64, WC_NET_TRAIN);
    int uviews = 0;
    for (int i = 0; i < unet->nnodes; i++) uviews += unet->nodes[i].view >= 0;
    NOTE("unet-lite: %d concatenation inputs are views, %d gradient buffers zeroed", uviews,
         unet->nzero);
    CHECK(uviews == 4 && unet->nzero == 0, "unet-lite: %d views, %d zeroed (want 4, 0)", uviews,
          unet->nzero);
    wc_net_destroy(unet);
    for (size_t g = 0; g < sizeof GRAPH_SPECS / sizeof GRAPH_SPECS[0]; g++) {
        char name[16];
        snprintf(name, sizeof name, "graph%zu", g);
        wc_net *net = wc_net_create(name, GRAPH_SPECS[g], 2, 1, 8, 8, WC_NET_TRAIN);
        CHECK(net != NULL, "%s did not build", name);
        if (!net) continue;
        int views = 0;
        for (int i = 0; i < net->nnodes; i++) views += net->nodes[i].view >= 0;
        NOTE("%s: %d views, %d gradient buffers zeroed before backward", name, views, net->nzero);
        CHECK(views > 0, "%s: no concatenation input became a view", name);
        if (g == 1)
            CHECK(net->nzero > 0, "%s: the view read late should force a zeroed buffer", name);
        /* the inference plan (buffers reused, views placed at their first producer) computes
         * the same outputs */
        wc_net *in = wc_net_create(name, GRAPH_SPECS[g], 2, 2, 8, 8, WC_NET_INFER);
        wc_net *tr = wc_net_create(name, GRAPH_SPECS[g], 2, 2, 8, 8, WC_NET_TRAIN);
        wc_net_init_params(tr, 8, 0.3);
        memcpy(in->params, tr->params, tr->nparams * sizeof(float));
        for (int i = 0; i < 2 * 2 * 64; i++)
            wc_net_input(in)[i] = wc_net_input(tr)[i] = (float)sin(0.37 * i);
        wc_net_forward(in, 2);
        wc_net_forward(tr, 2);
        CHECK(memcmp(wc_net_output(in), wc_net_output(tr), sizeof(float) * 2 * 64) == 0,
              "%s: inference output differs from training's", name);
        wc_net_destroy(in);
        wc_net_destroy(tr);
        wc_net_destroy(net);
        for (int threads = 1; threads <= 2; threads++) {
            wc_net_set_threads(threads);
            check_network_gradient(name, 2, 2, 8, 8, 1.0f, 8);
            wc_net_set_threads(1);
        }
    }
}

/* Inference reuses activation buffers; its output must be bitwise the training network's. */
static void test_inference_reuses_buffers_exactly(void) {
    const int C = 5, N = 2, H = 48, W = 40;
    wc_net *tr =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), C, N, H, W, WC_NET_TRAIN);
    wc_net *in =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), C, N, H, W, WC_NET_INFER);
    CHECK(same_forward(tr, in, N, 502), "inference output differs from the training network's");
    /* activations alone: the training arena also holds gradients, so compare with half of it */
    NOTE("activation floats: training %zu (outputs and gradients), inference %zu", tr->arena_floats,
         in->arena_floats);
    CHECK(in->arena_floats < 0.7 * (tr->arena_floats / 2), "inference keeps %zu of %zu floats",
          in->arena_floats, tr->arena_floats / 2);
    /* a second forward after changing part of the input only: the input must have survived */
    wc_rng r;
    wc_rng_seed(&r, 3, 504, 0);
    for (size_t i = 0; i < (size_t)C * H * W / 2; i++)
        wc_net_input(tr)[i] = wc_net_input(in)[i] = (float)wc_rng_normal(&r);
    wc_net_forward(tr, 1);
    wc_net_forward(in, 1);
    CHECK(memcmp(wc_net_output(tr), wc_net_output(in), sizeof(float) * H * W) == 0,
          "second inference output differs");
    wc_net_destroy(tr);
    wc_net_destroy(in);
}

static void test_bad_specs_are_refused(void) {
    static const char *bad[] = {
        "input x\nconvv a x out=1 k=1\n",                           /* unknown layer */
        "input x\nconv a y out=1 k=1\n",                            /* undefined input */
        "input x\nconv a x out=1\n",                                /* no kernel size */
        "input x\nconv a x out=1 k=1 pad=-1\n",                     /* negative */
        "input x\nconv a x out=2 k=1\n",                            /* 2 output channels */
        "input x\nmaxpool p x\nconv a p out=1 k=1\n",               /* wrong output size */
        "input x\nmaxpool p x\nconcat c p x\nconv a c out=1 k=1\n", /* size mismatch */
        "conv a x out=1 k=1\n",                                     /* no input */
        "input x\nconv a x out=1 k=1\nconv a a out=1 k=1\n",        /* duplicate name */
        "input x\nrelu r x foo=1\nconv a r out=1 k=1\n",            /* option on relu */
        "input x\nconv a x out=1 k=7\n", /* kernel larger than 6x6 input */
        "",
    };
    wc_log_set_quiet(1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fprintf(stderr, "# expected error for spec %zu: ", i);
        wc_net *net = wc_net_create("test", bad[i], 2, 1, 6, 6, WC_NET_TRAIN);
        CHECK(net == NULL, "bad spec %zu was accepted", i);
        wc_net_destroy(net);
    }
    wc_net *ok = wc_net_create("ok", "input x # comment\n\n  conv h x out=1 kh=3 kw=1 pad=1\n", 2,
                               1, 6, 6, WC_NET_TRAIN);
    CHECK(ok == NULL, "asymmetric kernel with pad=1 gives 6x8 output and must be refused");
    wc_net_destroy(ok);
    ok = wc_net_create("ok", "input x # comment\n\n  conv h x out=1 k=3 pad=1\n", 2, 1, 6, 6,
                       WC_NET_TRAIN);
    CHECK(ok != NULL, "a valid spec with comments and blank lines was refused");
    wc_net_destroy(ok);
    /* unet-lite needs a multiple of 4 */
    ok = wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), 3, 1, 30, 30, WC_NET_TRAIN);
    CHECK(ok == NULL, "unet-lite accepted 30x30");
    wc_net_destroy(ok);
    wc_log_set_quiet(0);
}

/* ---- the spec language's limits, and sizes a hostile spec may ask for ---------------------- */

/* Builds a network with stderr captured into log, so that its message can be checked; returns
 * whether wc_net_create refused it. */
static int refused(const char *spec, int C, int N, int H, int W, int mode, char *log, size_t size) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    WC_ASSERT(tmp && saved >= 0);
    dup2(fileno(tmp), 2);
    wc_net *net = wc_net_create("test", spec, C, N, H, W, mode);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(log, 1, size - 1, tmp);
    log[n] = '\0';
    fclose(tmp);
    wc_net_destroy(net);
    return net == NULL;
}

/* The spec is refused for C x H x W inputs (one sample, training), with a message saying text. */
static void expect_refused(const char *what, const char *spec, int C, int H, int W,
                           const char *text) {
    char log[4096];
    int r = refused(spec, C, 1, H, W, WC_NET_TRAIN, log, sizeof log);
    CHECK(r, "%s: accepted", what);
    CHECK(!r || strstr(log, text), "%s: the message does not say '%s': %s", what, text, log);
}

static void expect_built(const char *what, const char *spec, int C, int H, int W) {
    char log[4096];
    CHECK(!refused(spec, C, 1, H, W, WC_NET_TRAIN, log, sizeof log), "%s: refused: %s", what, log);
}

/* A spec text built piece by piece (caller frees). */
typedef struct {
    char *s;
    size_t len, cap;
} text;

static void add(text *t, const char *fmt, ...) WC_PRINTF(2, 3);
static void add(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (t->s && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        t->cap = 2 * (t->cap + (size_t)n + 64);
        t->s = realloc(t->s, t->cap);
        WC_ASSERT(t->s);
        if (t->len == 0) t->s[0] = '\0';
    }
}

/* A chain of n ReLUs after the input, then the output convolution: n + 2 layers. */
static char *relu_chain(int n) {
    text t = {0};
    add(&t, "input r0\n");
    for (int i = 1; i <= n; i++) add(&t, "relu r%d r%d\n", i, i - 1);
    add(&t, "conv h r%d out=1 k=1\n", n);
    return t.s;
}

static void test_spec_text_limits(void) {
    /* words beyond the 16th were dropped without a word: here the 17th would be pad=1 */
    expect_refused("17 words",
                   "input x\nconv h x out=1 k=1 k=1 k=1 k=1 k=1 k=1 k=1 k=1 k=1 k=1 "
                   "k=1 k=1 pad=1\n",
                   2, 6, 6, "more than 16 words");
    /* WC_NET_MAX_LINE characters, comment included */
    text t = {0};
    add(&t, "input x\n# %*s\nconv h x out=1 k=1\n", WC_NET_MAX_LINE - 2, "long");
    expect_built("a line of exactly the limit", t.s, 2, 6, 6);
    free(t.s), t = (text){0};
    add(&t, "input x\n# %*s\nconv h x out=1 k=1\n", WC_NET_MAX_LINE - 1, "long");
    expect_refused("a line beyond the limit", t.s, 2, 6, 6, "test:2: a line longer than 1024");
    free(t.s), t = (text){0};
    /* WC_NET_MAX_LAYERS layers */
    char *spec = relu_chain(WC_NET_MAX_LAYERS - 2);
    expect_built("256 layers", spec, 2, 4, 4);
    free(spec);
    spec = relu_chain(WC_NET_MAX_LAYERS - 1);
    expect_refused("257 layers", spec, 2, 4, 4, "more than 256 layers");
    free(spec);
    /* WC_NET_MAX_SPEC bytes, even of comments */
    add(&t, "input x\nconv h x out=1 k=1\n");
    while (t.len <= WC_NET_MAX_SPEC) add(&t, "# %900s\n", "comment");
    expect_refused("a spec beyond 1 MiB", t.s, 2, 6, 6, "longer than 1048576 bytes");
    free(t.s);
}

static void test_spec_characters_and_names(void) {
    expect_built("CR-LF line ends, tabs, UTF-8 in comments",
                 "input\tx\r\n# R\xc3\xa4umlich: 3x3\r\n\r\nconv h x out=1 k=1 # \xe2\x80\x94\r\n",
                 2, 6, 6);
    expect_refused("a control character", "input x\nconv h x out=1\x01 k=1\n", 2, 6, 6,
                   "test:2: character 0x01 outside a comment");
    expect_refused("non-ASCII in a name", "input x\nconv h\xc3\xa9 x out=1 k=1\n", 2, 6, 6,
                   "character 0xc3");
    expect_refused("a vertical tab", "input x\n\vconv h x out=1 k=1\n", 2, 6, 6, "character 0x0b");
    /* a quote would break the JSON header of exported weights; '=' reads as an option */
    expect_refused("a quote in a name", "input x\nconv h\" x out=1 k=1\n", 2, 6, 6, "not 'h\"'");
    expect_refused("an option for a name", "input x\nconv out=1 x k=1\n", 2, 6, 6,
                   "a layer needs a name");
    expect_refused("a name of 32 characters",
                   "input x\nconv abcdefghijklmnopqrstuvwxyz012345 x out=1 k=1\n", 2, 6, 6,
                   "a layer needs a name of 1 to 31");
    expect_built("names of letters, digits, '_', '.', '-'",
                 "input x_0\nconv Enc-1.a_b x_0 out=1 k=1\n", 2, 6, 6);
    expect_refused("a duplicate name", "input x\nrelu x x\nconv h x out=1 k=1\n", 2, 6, 6,
                   "layer name 'x' used twice");
    /* line numbers count blank lines too */
    expect_refused("line numbers", "input x\n\n\n  \nconvv a x\n", 2, 6, 6, "test:5: unknown");
}

static void test_spec_options(void) {
    expect_refused("an option twice", "input x\nconv h x out=1 k=1 k=3\n", 2, 6, 6,
                   "option k given twice");
    expect_refused("k= and kh=", "input x\nconv h x out=1 kh=3 k=1\n", 2, 6, 6,
                   "option k given twice (k= gives both kh= and kw=)");
    expect_refused("out twice: no word of k=", "input x\nconv h x out=1 k=1 out=01\n", 2, 6, 6,
                   "option out given twice\n");
    expect_refused("out beyond 2^20", "input x\nconv h x out=1048577 k=1\n", 2, 6, 6,
                   "from 0 to 1048576, got '1048577'");
    expect_refused("a huge value", "input x\nconv h x out=1 k=99999999999999999999\n", 2, 6, 6,
                   "option k needs an integer from 1 to 1048576");
    expect_refused("k=0", "input x\nconv h x out=1 k=0\n", 2, 6, 6, "from 1 to");
    expect_refused("stride=0", "input x\nconv h x out=1 k=1 stride=0\n", 2, 6, 6, "stride >= 1");
}

/* Sizes that overflowed an int before any check (UBSan: signed overflow in infer_shapes) or
 * that were silently wrapped, now refused by name. */
static void test_spec_size_overflow(void) {
    text t = {0};
    add(&t, "input c0\n");
    for (int i = 1; i <= 31; i++) add(&t, "concat c%d c%d c%d\n", i, i - 1, i - 1);
    add(&t, "conv h c0 out=1 k=1\n");
    expect_refused("channels doubled 31 times", t.s, 3, 16, 16, "more than a tensor may hold");
    free(t.s), t = (text){0};
    add(&t, "input u0\n");
    for (int i = 1; i <= 28; i++) add(&t, "upsample u%d u%d\n", i, i - 1);
    add(&t, "conv h u0 out=1 k=1\n");
    expect_refused("28 upsamplings", t.s, 3, 16, 16, "layer u11: its output of 1 x 3 x 32768");
    free(t.s);
    expect_refused("a weight beyond INT_MAX values",
                   "input x\nconv a x out=1048576 k=1048576 pad=524288\nconv h a out=1 k=1\n", 3,
                   16, 16, "layer a: its weight of 1048576 x 3 x 1048576 x 1048576");
    expect_refused("an activation beyond INT_MAX values",
                   "input x\nconv a x out=1048576 k=1 pad=64\nconv h a out=1 k=1 stride=9\n", 3, 16,
                   16, "layer a: its output of 1 x 1048576 x 144 x 144");
    expect_refused("padding that overflows coordinates", "input x\nconv h x out=1 k=1 pad=64\n", 1,
                   INT_MAX - 100, 1, "overflow its coordinates");
    expect_refused("pooling an odd size",
                   "input x\nmaxpool p x\nupsample u p\nconv h u out=1 k=1\n", 2, 5, 4,
                   "max-pooling needs an even size, got 4x5"); /* width x height */
    expect_refused("a stride that leaves 1x1", "input x\nconv h x out=1 k=1 stride=1048576\n", 2,
                   16, 16, "it gives 1 channel(s) at 1x1");
    expect_refused("a kernel beyond input and padding", "input x\nconv h x out=1 k=9 pad=1\n", 2, 6,
                   6, "a 9x9 kernel does not fit its 6x6 input");
    expect_refused("concatenating 8x8 and 16x16",
                   "input x\nmaxpool p x\nconcat c p x\nconv h c out=1 k=1\n", 2, 16, 16,
                   "cannot concatenate p (8x8) and x (16x16)");
}

static void test_receptive_field_bounded(void) {
    /* strides multiply the scale without shrinking a 1x1 image: it overflowed an int */
    expect_refused("alignment beyond 2^20",
                   "input x\nconv a x out=1 k=1 stride=1048576\nconv b a out=1 k=1 stride=1048576\n"
                   "upsample u1 b\nupsample u2 u1\nupsample u3 u2\nupsample u4 u3\n"
                   "conv h u4 out=1 k=1\n",
                   3, 16, 16, "layer b: the network's receptive field");
    expect_refused("radius beyond 2^20",
                   "input x\nconv a x out=1 k=1 stride=1048576\nconv b a out=1 k=3 pad=1\n"
                   "conv c b out=1 k=3 pad=1\nupsample u1 c\nupsample u2 u1\nupsample u3 u2\n"
                   "upsample u4 u3\nconv h u4 out=1 k=1\n",
                   3, 16, 16, "layer c: the network's receptive field (radius 4063232");
    wc_net *net =
        wc_net_create("unet-lite", wc_net_builtin_spec("unet-lite"), 3, 1, 16, 16, WC_NET_INFER);
    int radius, align;
    wc_net_receptive_field(net, &radius, &align);
    CHECK(align == 4, "unet-lite's alignment is %d, not 4", align);
    wc_net_destroy(net);
}

/* Parameters, gradients, activations and workspace together must fit the memory limit, checked
 * before anything large is allocated; the message names the layer where the network outgrows
 * it. */
static void test_memory_limit(void) {
    char log[4096];
    const char *unet = wc_net_builtin_spec("unet-lite");
    for (int mode = 0; mode < 2; mode++) {
        wc_net_set_memory_limit(0);
        wc_net *net = wc_net_create("unet-lite", unet, 12, 4, 64, 64, mode);
        wc_memory_plan mp;
        wc_net_memory_plan(net, &mp);
        wc_net_destroy(net);
        const size_t need = mp.params + mp.grads + mp.activations + mp.workspace;
        wc_net_set_memory_limit(need);
        CHECK(!refused(unet, 12, 4, 64, 64, mode, log, sizeof log),
              "mode %d: refused with exactly the memory it needs: %s", mode, log);
        wc_net_set_memory_limit(need - 1);
        CHECK(refused(unet, 12, 4, 64, 64, mode, log, sizeof log) &&
                  strstr(log, "layer h: the network needs") && strstr(log, "memory limit"),
              "mode %d: one byte short of the limit: %s", mode, log);
        wc_net_set_memory_limit((size_t)1 << 20);
        CHECK(refused(unet, 12, 4, 64, 64, mode, log, sizeof log) &&
                  strstr(log, "layer e1.0: the network needs"),
              "mode %d: 1 MiB: %s", mode, log);
    }
    wc_net_set_memory_limit(0);
    /* The default is the machine's physical memory: 4 GiB activations (and as much gradient),
     * one layer beyond it, refused with nothing large allocated. */
    const double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    const int layers = (int)(phys / (8.0 * (1 << 30))) + 2;
    if (layers > WC_NET_MAX_LAYERS - 2) {
        NOTE("%.0f GiB of physical memory: too much to exceed with %d layers, skipped",
             phys / (1 << 30), WC_NET_MAX_LAYERS);
        return;
    }
    text t = {0};
    add(&t, "input c0\n");
    for (int i = 1; i <= layers; i++) add(&t, "conv c%d c%d out=1024 k=1\n", i, i - 1);
    add(&t, "conv h c%d out=1 k=1\n", layers);
    largest_allocation = 0;
    int r = refused(t.s, 1, 1, 1024, 1024, WC_NET_TRAIN, log, sizeof log);
    NOTE("%d layers of 4 GiB against %.1f GiB: largest allocation %zu bytes", layers,
         phys / (1 << 30), largest_allocation);
    CHECK(r && strstr(log, "more than the physical memory"), "not refused: %s", log);
    CHECK(largest_allocation < (1 << 20), "allocated %zu bytes before refusing",
          largest_allocation);
    free(t.s);
}

/* What wc_net_plan says a network takes is what wc_net_create then allocates (the address-space
 * checks of train and predict count it before the network exists), and finding it allocates
 * nothing of that size. */
static void test_plan_before_allocation(void) {
    const char *specs[] = {wc_net_builtin_spec("unet-lite"), wc_net_builtin_spec("logistic"),
                           GRAPH_SPECS[0], GRAPH_SPECS[1]};
    for (int threads = 1; threads <= 3; threads += 2) {
        wc_net_set_threads(threads);
        for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
            for (int mode = 0; mode < 2; mode++)
                for (int N = 1; N <= 5; N += 4) {
                    const int C = k < 2 ? 12 : 2, side = k < 2 ? 64 : 8;
                    wc_memory_plan planned, built;
                    largest_allocation = 0;
                    CHECK(wc_net_plan("t", specs[k], C, N, side, side, mode, &planned) == WC_OK,
                          "spec %zu: not planned", k);
                    const size_t while_planning = largest_allocation;
                    wc_net *net = wc_net_create("t", specs[k], C, N, side, side, mode);
                    wc_net_memory_plan(net, &built);
                    wc_net_destroy(net);
                    CHECK(memcmp(&planned, &built, sizeof built) == 0,
                          "spec %zu, mode %d, N %d, %d threads: planned %zu+%zu+%zu+%zu bytes, "
                          "built %zu+%zu+%zu+%zu",
                          k, mode, N, threads, planned.params, planned.grads, planned.activations,
                          planned.workspace, built.params, built.grads, built.activations,
                          built.workspace);
                    /* the spec's nodes and the plan's offsets, a few KiB */
                    CHECK(while_planning < (64 << 10) &&
                              (k > 1 || while_planning * 100 < built.activations),
                          "spec %zu: planning allocated %zu bytes", k, while_planning);
                }
    }
    wc_net_set_threads(1);
}

/* An allocation that fails (a limit no plan foresaw) names what it was for and where, what ran
 * out (the address-space limit, what the process maps, how far to raise it) and the command's
 * advice; in a child, under a limit 64 MiB above what it maps. */
static void test_out_of_memory_says_what(void) {
    int fd[2];
    WC_ASSERT(pipe(fd) == 0);
    fflush(stdout), fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        const struct rlimit rl = {wc_address_space_used() + ((size_t)64 << 20), RLIM_INFINITY};
        setrlimit(RLIMIT_AS, &rl);
        wc_alloc_set_advice("a smaller --micro-batch than 9");
        void *p = WC_ALLOC_FOR((size_t)256 << 20, "the test's activations");
        _exit(p ? 0 : 3); /* not reached: the failure ends the process */
    }
    close(fd[1]);
    char log[4096] = "";
    size_t n = 0;
    ssize_t r;
    while (n < sizeof log - 1 && (r = read(fd[0], log + n, sizeof log - 1 - n)) > 0) n += r;
    log[n] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    NOTE("%s", log);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == WC_EXIT_RUNTIME, "status %d", status);
    CHECK(strstr(log, "out of memory allocating 256.0 MiB for the test's activations (") &&
              strstr(log, "the address-space limit of ") &&
              strstr(log, "raise the limit to at least ") && strstr(log, "(ulimit -v ") &&
              strstr(log, ", or a smaller --micro-batch than 9"),
          "the message: %s", log);
}

/* ---- random graphs ------------------------------------------------------------------------ */

typedef struct {
    char name[16];
    int C, H, W;
} gen_node;

static int pick(wc_rng *r, int n) {
    return (int)wc_rng_below(r, (uint64_t)n);
}

/* One of the last `last` of n nodes (of all n when there are fewer). */
static int pick_recent(wc_rng *r, int n, int last) {
    return n - 1 - pick(r, WC_MIN(n, last));
}

/* A random spec for a 2-channel HxW input (caller frees): 5 to 14 draws of a convolution (kernel
 * 1 to 5, square 7 times in 10, stride 1 or 2, padding 0 to 2, 1 to 4 channels, then a ReLU 6
 * times in 10), a ReLU, a max-pooling, an upsampling or a concatenation (of two layers of one
 * size), reading one of the last two layers 7 times in 10, else any; a draw that does not fit
 * its input is dropped. Then the 1x1 head, on one of the last three layers of the input's size.
 * The generator of the fuzzer that found the two plan bugs of 4876b2a. */
static char *random_spec(wc_rng *r, int H, int W) {
    gen_node nodes[32] = {{"x", 2, H, W}};
    int n = 1;
    text t = {0};
    add(&t, "input x\n");
    const int draws = 5 + pick(r, 10);
    for (int i = 0; i < draws; i++) {
        const char op = "cccrrmuaa"[pick(r, 9)];
        const gen_node a = nodes[wc_rng_uniform(r) < 0.7 ? pick_recent(r, n, 2) : pick(r, n)];
        gen_node o = a;
        snprintf(o.name, sizeof o.name, "n%d", i);
        if (op == 'c') {
            static const int khs[] = {1, 1, 2, 3, 3, 5}, kws[] = {1, 3, 5};
            static const int strides[] = {1, 1, 1, 2};
            const int kh = khs[pick(r, 6)];
            const int kw = wc_rng_uniform(r) < 0.7 ? kh : kws[pick(r, 3)];
            const int stride = strides[pick(r, 4)];
            const int pads[] = {0, kh / 2, kh / 2, 1, 2}, pad = pads[pick(r, 5)];
            if (a.H + 2 * pad < kh || a.W + 2 * pad < kw) continue;
            o.C = 1 + pick(r, 4);
            o.H = (a.H + 2 * pad - kh) / stride + 1, o.W = (a.W + 2 * pad - kw) / stride + 1;
            if (o.H > 24 || o.W > 24) continue;
            add(&t, "conv %s %s out=%d ", o.name, a.name, o.C);
            if (kh == kw)
                add(&t, "k=%d pad=%d stride=%d\n", kh, pad, stride);
            else
                add(&t, "kh=%d kw=%d pad=%d stride=%d\n", kh, kw, pad, stride);
            if (wc_rng_uniform(r) < 0.6) {
                nodes[n++] = o;
                add(&t, "relu %sr %s\n", o.name, o.name);
                strcat(o.name, "r");
            }
        } else if (op == 'r') {
            add(&t, "relu %s %s\n", o.name, a.name);
        } else if (op == 'm') {
            if (a.H % 2 || a.W % 2) continue;
            o.H /= 2, o.W /= 2;
            add(&t, "maxpool %s %s\n", o.name, a.name);
        } else if (op == 'u') {
            if (a.H > 8 || a.W > 8) continue;
            o.H *= 2, o.W *= 2;
            add(&t, "upsample %s %s\n", o.name, a.name);
        } else {
            int same[32], ns = 0;
            for (int j = 0; j < n; j++)
                if (nodes[j].H == a.H && nodes[j].W == a.W) same[ns++] = j;
            const gen_node b =
                nodes[same[wc_rng_uniform(r) < 0.6 ? pick_recent(r, ns, 3) : pick(r, ns)]];
            o.C = a.C + b.C;
            add(&t, "concat %s %s %s\n", o.name, a.name, b.name);
        }
        nodes[n++] = o;
    }
    int full[32], nf = 0;
    for (int j = 1; j < n; j++)
        if (nodes[j].H == H && nodes[j].W == W) full[nf++] = j;
    add(&t, "conv h %s out=1 k=1\n", nodes[nf ? full[pick_recent(r, nf, 3)] : 0].name);
    return t.s;
}

/* The graph under test, printed if the test crashes (a plan bug can overrun a buffer). */
static char name_under_test[16];
static const char *spec_under_test;

static void print_spec(const char *name, const char *spec) {
    printf("#   %s's spec: \"", name);
    for (const char *c = spec; *c; c++)
        if (*c == '\n')
            printf("\\n");
        else
            putchar(*c);
    printf("\"\n");
}

static void crashed(int sig) {
    fflush(stdout); /* not async-signal-safe, but the process is lost anyway */
    print_spec(name_under_test, spec_under_test);
    printf("#   crashed on %s (signal %d)\n", name_under_test, sig);
    fflush(stdout);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Whether two networks' outputs for N samples, and their gradients, are bitwise equal. */
static int same_step(wc_net *a, wc_net *b, int N) {
    return memcmp(wc_net_output(a), wc_net_output(b), sizeof(float) * N * a->H * a->W) == 0 &&
           memcmp(a->grads, b->grads, sizeof(float) * a->nparams) == 0;
}

/* Random graphs (random_spec) of a 2-channel 8x8 input, 2 samples, each checked as the fuzzer
 * did: the forward equals the naive double execution (relative error below 1e-5, float rounding
 * reaching 6e-7 over these graphs; the plan bugs gave 0.1 to 1), the gradient finite differences
 * (below 2e-3, as above, and few kinks), training on 2 threads gives outputs and gradients, and
 * inference on 1 and 2 threads outputs, bitwise those of training on 1. A failing graph's spec
 * is printed as a C string, ready for GRAPH_SPECS; so is the one a crash interrupts. */
static void test_random_graphs(void) {
    const int count = 800, N = 2, H = 8, W = 8;
    int built = 0, checked = 0, kinks = 0;
    double worst_fwd = 0, worst_grad = 0;
    fflush(stdout);
    signal(SIGSEGV, crashed), signal(SIGBUS, crashed), signal(SIGABRT, crashed);
    for (int g = 0; g < count; g++) {
        wc_rng r;
        wc_rng_seed(&r, 36, 600, (uint64_t)g);
        char *spec = random_spec(&r, H, W), *name = name_under_test;
        snprintf(name, sizeof name_under_test, "random%d", g);
        const int failed_before = harness_failed_checks;
        spec_under_test = spec;
        tiny_problem p = tiny_make_spec(name, spec, 2, N, H, W, 21);
        if (p.net) {
            built++;
            double err = forward_rel_err(&p);
            CHECK(err < 1e-5, "%s: forward differs from naive execution: %.3g", name, err);
            fd_check fd = gradient_vs_fd(&p, 1.0f, 6);
            CHECK(fd.worst < 2e-3, "%s: gradient differs from finite differences by %.3g", name,
                  fd.worst);
            CHECK(fd.kinks <= 2 + fd.checked / 20, "%s: %d of %d coordinates at kinks", name,
                  fd.kinks, fd.checked + fd.kinks);
            worst_fwd = fmax(worst_fwd, err), worst_grad = fmax(worst_grad, fd.worst);
            checked += fd.checked, kinks += fd.kinks;
            wc_net_set_threads(2);
            tiny_problem q = tiny_make_spec(name, spec, 2, N, H, W, 21);
            wc_net_set_threads(1);
            tiny_step(&q, 1.0f);
            CHECK(same_step(p.net, q.net, N), "%s: 2 threads differ from 1", name);
            tiny_free(&q);
            for (int threads = 1; threads <= 2; threads++) {
                wc_net_set_threads(threads);
                wc_net *in = wc_net_create(name, spec, 2, N, H, W, WC_NET_INFER);
                wc_net_set_threads(1);
                CHECK(same_forward(p.net, in, N, 505),
                      "%s: inference on %d thread(s) differs "
                      "from training",
                      name, threads);
                wc_net_destroy(in);
            }
            tiny_free(&p);
        }
        if (harness_failed_checks != failed_before) print_spec(name, spec);
        free(spec);
    }
    signal(SIGSEGV, SIG_DFL), signal(SIGBUS, SIG_DFL), signal(SIGABRT, SIG_DFL);
    NOTE("%d of %d random graphs built; forward max rel err %.2e; %d gradient coordinates "
         "checked, %d skipped at kinks, max rel err %.2e",
         built, count, worst_fwd, checked, kinks, worst_grad);
    CHECK(built >= count * 9 / 10, "only %d of %d random specs built", built, count);
}

/* The first predictions follow the label rate whatever the network's last layers: an output
 * made by upsampling or max-pooling a 1-channel convolution (a coarse head) takes the constant
 * of its bias as it is, so that bias starts at logit(prior) too (it stayed 0, p = 0.5: the
 * validation loss after one step at --lr 1e-12 was 0.74 instead of 0.25 on a region with 2.6%
 * burned). Measured on a zero input, where every output is that bias alone. */
static void test_output_bias_is_the_prior_logit(void) {
    const char *specs[][2] = {
        {"unet-lite", NULL},
        {"logistic", NULL},
        {"coarse-head", "input x\nconv e x out=4 k=3 pad=1\nrelu r e\n"
                        "conv h r out=1 k=1 stride=2\nupsample u h\n"},
        {"pooled-head", "input x\nconv h x out=1 k=1\nmaxpool p h\nupsample u p\n"},
    };
    const double prior = 0.0263;
    const float want = (float)log(prior / (1.0 - prior));
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const char *spec = specs[k][1] ? specs[k][1] : wc_net_builtin_spec(specs[k][0]);
        wc_net *net = wc_net_create(specs[k][0], spec, 3, 1, 16, 16, WC_NET_INFER);
        CHECK(net != NULL, "%s does not build", specs[k][0]);
        if (!net) continue;
        wc_net_init_params(net, 7, prior);
        float *x = wc_net_input(net);
        for (size_t i = 0; i < (size_t)3 * 16 * 16; i++) x[i] = 0.0f;
        wc_net_forward(net, 1);
        const float got = wc_net_output(net)[5 * 16 + 9];
        CHECK(fabsf(got - want) < 1e-5f,
              "%s: the output on a zero input is %.6g, not logit(%g) = %.6g", specs[k][0], got,
              prior, want);
        wc_net_destroy(net);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    wc_blas_core_settle(argv); /* OpenBLAS's kernels as the program runs them (blas_core.h) */
    RUN(test_unet_lite_matches_reference_size);
    RUN(test_relu_output_refused_for_training_only);
    RUN(test_forward_matches_naive_double);
    RUN(test_network_gradient_finite_differences);
    RUN(test_receptive_field_is_conservative);
    RUN(test_no_allocation_in_step);
    RUN(test_inference_reuses_buffers_exactly);
    RUN(test_bad_specs_are_refused);
    RUN(test_spec_text_limits);
    RUN(test_spec_characters_and_names);
    RUN(test_spec_options);
    RUN(test_spec_size_overflow);
    RUN(test_receptive_field_bounded);
    RUN(test_memory_limit);
    RUN(test_plan_before_allocation);
    RUN(test_out_of_memory_says_what);
    RUN(test_threads_bitwise);
    RUN(test_no_allocation_with_threads);
    RUN(test_graph_plans);
    RUN(test_random_graphs);
    RUN(test_output_bias_is_the_prior_logit);
    HARNESS_EXIT();
}
