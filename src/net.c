/* net.c: a network from its spec: shapes, parameters, the memory check, allocation, and
 * running it forward and backward. See net.h for the spec language and the memory rules. A
 * spec may come from an untrusted checkpoint: every size is checked before it is stored or
 * allocated, and the memory before any large buffer exists. Not here: reading the spec text
 * (netspec.c), where buffers go (netplan.c), the layers' arithmetic (conv.c, layers.c). */
#include "wildcpu/net.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wildcpu/netplan.h"
#include "wildcpu/netspec.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

/* ---- shapes, parameters, buffers -------------------------------------------------------- */

/* a*b*c*d when it is at most INT_MAX, else -1 (all factors >= 1; no product overflows int64 as
 * each step stays below INT_MAX before the next multiplication). */
static int64_t count4(int64_t a, int64_t b, int64_t c, int64_t d) {
    const int64_t f[4] = {a, b, c, d};
    int64_t p = 1;
    for (int i = 0; i < 4; i++) {
        if (f[i] < 1 || f[i] > INT_MAX / p) return -1;
        p *= f[i];
    }
    return p;
}

/* The layers index one micro-batch's tensor with int and BLAS takes int dimensions, so no
 * tensor may hold more than INT_MAX values (8 GiB of floats), whatever the memory. */
static int output_fits(const wc_net *net, const wc_node *nd, int64_t C, int64_t H, int64_t W) {
    if (count4(net->max_N, C, H, W) >= 0) return WC_OK;
    wc_error("%s: layer %s: its output of %d x %lld x %lld x %lld values is more than a tensor "
             "may hold (%d)",
             net->arch, nd->name, net->max_N, (long long)C, (long long)H, (long long)W, INT_MAX);
    return WC_ERR;
}

/* Output shapes from the input size; parameter offsets. Every size is computed in 64 bits and
 * checked before it is stored in an int. Returns WC_ERR on shapes that do not fit. */
static int infer_shapes(wc_net *net) {
    size_t off = 0;
    for (int i = 0; i < net->nnodes; i++) {
        wc_node *nd = &net->nodes[i];
        const wc_node *a = nd->in[0] >= 0 ? &net->nodes[nd->in[0]] : NULL;
        const wc_node *b = nd->in[1] >= 0 ? &net->nodes[nd->in[1]] : NULL;
        int64_t C, H, W;
        switch (nd->op) {
        case WC_OP_INPUT:
            C = net->in_channels, H = net->H, W = net->W;
            break;
        case WC_OP_CONV:
            /* input + 2 pad + kernel bounds every coordinate the convolution computes in int,
             * in its own loops and in the transposed one of its backward pass (conv.c); sizes
             * are printed width x height, as everywhere */
            if ((int64_t)a->H + 2 * nd->pad + nd->KH > INT_MAX ||
                (int64_t)a->W + 2 * nd->pad + nd->KW > INT_MAX) {
                wc_error("%s: layer %s: padding %d and a %dx%d kernel on a %dx%d input overflow "
                         "its coordinates",
                         net->arch, nd->name, nd->pad, nd->KW, nd->KH, a->W, a->H);
                return WC_ERR;
            }
            if (a->H + 2 * nd->pad < nd->KH || a->W + 2 * nd->pad < nd->KW) {
                wc_error("%s: layer %s: a %dx%d kernel does not fit its %dx%d input", net->arch,
                         nd->name, nd->KW, nd->KH, a->W, a->H);
                return WC_ERR;
            }
            if (count4(nd->K, a->C, nd->KH, nd->KW) < 0) {
                wc_error("%s: layer %s: its weight of %d x %d x %d x %d values is more than a "
                         "tensor may hold (%d)",
                         net->arch, nd->name, nd->K, a->C, nd->KH, nd->KW, INT_MAX);
                return WC_ERR;
            }
            nd->shape = wc_conv_shape_make(net->max_N, a->C, a->H, a->W, nd->K, nd->KH, nd->KW,
                                           nd->stride, nd->pad);
            C = nd->K, H = nd->shape.OH, W = nd->shape.OW;
            /* at most WC_NET_MAX_LAYERS tensors of at most INT_MAX values: no overflow */
            nd->w_off = off;
            off += (size_t)nd->K * a->C * nd->KH * nd->KW;
            nd->b_off = off;
            off += (size_t)nd->K;
            break;
        case WC_OP_RELU:
            C = a->C, H = a->H, W = a->W;
            break;
        case WC_OP_MAXPOOL:
            if (a->H % 2 || a->W % 2) {
                wc_error("%s: layer %s: max-pooling needs an even size, got %dx%d; the input "
                         "size must be a multiple of the network's alignment",
                         net->arch, nd->name, a->W, a->H);
                return WC_ERR;
            }
            C = a->C, H = a->H / 2, W = a->W / 2;
            break;
        case WC_OP_UPSAMPLE:
            C = a->C, H = 2 * (int64_t)a->H, W = 2 * (int64_t)a->W;
            break;
        case WC_OP_CONCAT:
            if (a->H != b->H || a->W != b->W) {
                wc_error("%s: layer %s: cannot concatenate %s (%dx%d) and %s (%dx%d)", net->arch,
                         nd->name, a->name, a->W, a->H, b->name, b->W, b->H);
                return WC_ERR;
            }
            C = (int64_t)a->C + b->C, H = a->H, W = a->W;
            break;
        default:
            WC_ASSERT(0);
            return WC_ERR;
        }
        if (output_fits(net, nd, C, H, W) != WC_OK) return WC_ERR;
        nd->C = (int)C, nd->H = (int)H, nd->W = (int)W;
    }
    const wc_node *last = &net->nodes[net->nnodes - 1];
    if (last->C != 1 || last->H != net->H || last->W != net->W) {
        wc_error("%s: the last layer (%s) must give 1 channel at the input's size %dx%d, "
                 "it gives %d channel(s) at %dx%d",
                 net->arch, last->name, net->W, net->H, last->C, last->W, last->H);
        return WC_ERR;
    }
    net->nparams = off;
    return WC_OK;
}

/* Scale and reach saturate here: far beyond WC_NET_MAX_REACH, and small enough that a product
 * with an option value (<= 2^20 + 1) stays far from overflowing int64. */
#define REACH_CAP ((int64_t)1 << 40)

/* The receptive field in 64 bits (see wc_net_receptive_field). Per node: `scale` input pixels
 * per node pixel, and `reach`: how many input pixels beyond its own footprint a node pixel
 * depends on, propagated conservatively. With `culprit`, also the first layer at which the
 * alignment or the output's radius goes beyond WC_NET_MAX_REACH (-1 if none). */
static int64_t lcm64(int64_t a, int64_t b) {
    int64_t x = a, y = b;
    while (y) {
        int64_t r = x % y;
        x = y, y = r;
    }
    return WC_MIN(a / x * b, REACH_CAP);
}

static void receptive_field(const wc_net *net, int64_t *radius, int64_t *alignment, int64_t *exact,
                            int *culprit) {
    const int n = net->nnodes;
    int64_t *scale = WC_CALLOC(n, sizeof(int64_t)), *reach = WC_CALLOC(n, sizeof(int64_t));
    int64_t align = 1;
    if (exact) *exact = 1;
    scale[0] = 1;
    for (int i = 1; i < n; i++) {
        const wc_node *nd = &net->nodes[i];
        int a = nd->in[0], b = nd->in[1];
        switch (nd->op) {
        case WC_OP_CONV:
            if (exact)
                *exact =
                    lcm64(*exact, WC_MIN(scale[a], REACH_CAP) *
                                      wc_conv_output_tile(nd->KH, nd->KW, nd->stride, nd->pad));
            scale[i] = scale[a] * nd->stride;
            reach[i] = reach[a] + scale[a] * WC_MAX(WC_MAX(nd->pad, nd->KH - 1 - nd->pad),
                                                    nd->KW - 1 - nd->pad);
            break;
        case WC_OP_MAXPOOL:
            scale[i] = 2 * scale[a], reach[i] = reach[a];
            break;
        case WC_OP_UPSAMPLE:
            scale[i] = WC_MAX(1, scale[a] / 2), reach[i] = reach[a] + scale[a];
            break;
        case WC_OP_CONCAT:
            scale[i] = WC_MIN(scale[a], scale[b]), reach[i] = WC_MAX(reach[a], reach[b]);
            break;
        default:
            scale[i] = scale[a], reach[i] = reach[a];
            break;
        }
        scale[i] = WC_MIN(scale[i], REACH_CAP), reach[i] = WC_MIN(reach[i], REACH_CAP);
        align = WC_MAX(align, scale[i]);
    }
    *radius = reach[n - 1];
    *alignment = align;
    if (culprit) {
        /* the first layer beyond the limit: for the alignment any layer (every pooling counts),
         * for the radius one the output depends on (reach only grows along a path) */
        char *feeds = WC_CALLOC(n, 1);
        feeds[n - 1] = 1;
        for (int i = n - 1; i > 0; i--)
            for (int j = 0; j < 2; j++)
                if (feeds[i] && net->nodes[i].in[j] >= 0) feeds[net->nodes[i].in[j]] = 1;
        *culprit = -1;
        for (int i = 0; i < n && *culprit < 0; i++)
            if (scale[i] > WC_NET_MAX_REACH || (feeds[i] && reach[i] > WC_NET_MAX_REACH))
                *culprit = i;
        free(feeds);
    }
    free(scale);
    free(reach);
}

/* Prediction works on windows wider than twice the radius, aligned to the pooling grid: a
 * network whose radius or alignment is beyond WC_NET_MAX_REACH could never run, and the window
 * arithmetic (int, predict.c) must not overflow. */
static int check_reach(const wc_net *net) {
    int64_t radius, align;
    int culprit;
    receptive_field(net, &radius, &align, NULL, &culprit);
    if (radius <= WC_NET_MAX_REACH && align <= WC_NET_MAX_REACH) return WC_OK;
    wc_error("%s: layer %s: the network's receptive field (radius %lld%s, alignment %lld%s "
             "pixels) goes beyond %d pixels",
             net->arch, net->nodes[culprit >= 0 ? culprit : net->nnodes - 1].name,
             (long long)radius, radius >= REACH_CAP ? " or more" : "", (long long)align,
             align >= REACH_CAP ? " or more" : "", WC_NET_MAX_REACH);
    return WC_ERR;
}

static void build_tensor_table(wc_net *net) {
    int nconv = 0;
    for (int i = 0; i < net->nnodes; i++) nconv += net->nodes[i].op == WC_OP_CONV;
    net->ntensors = 2 * nconv;
    net->tensors = WC_CALLOC(net->ntensors, sizeof(wc_tensor));
    int t = 0;
    for (int i = 0; i < net->nnodes; i++) {
        const wc_node *nd = &net->nodes[i];
        if (nd->op != WC_OP_CONV) continue;
        wc_tensor *w = &net->tensors[t++], *b = &net->tensors[t++];
        snprintf(w->name, sizeof w->name, "%s.weight", nd->name);
        w->ndim = 4;
        w->shape[0] = nd->K, w->shape[1] = nd->shape.C, w->shape[2] = nd->KH, w->shape[3] = nd->KW;
        w->offset = nd->w_off;
        w->count = (size_t)nd->K * nd->shape.C * nd->KH * nd->KW;
        w->is_weight = 1;
        snprintf(b->name, sizeof b->name, "%s.bias", nd->name);
        b->ndim = 1;
        b->shape[0] = nd->K;
        b->offset = nd->b_off;
        b->count = (size_t)nd->K;
    }
}

/* ---- creating and destroying ------------------------------------------------------------ */

static int default_threads = 1;

void wc_net_set_threads(int threads) {
    default_threads = WC_MAX(1, threads);
    openblas_set_num_threads(1);
}

static size_t memory_limit_bytes = 0; /* 0: physical memory */

void wc_net_set_memory_limit(size_t bytes) {
    memory_limit_bytes = bytes;
}

/* Parameters (and gradients), activations and workspace must fit the memory limit, checked
 * layer by layer in order so that the message names the layer at which the network outgrows
 * it: a spec from a hostile checkpoint gets an error here, not an out-of-memory death later. */
static int check_memory(const wc_net *net, const size_t *upto) {
    size_t limit = memory_limit_bytes;
    const char *what = "memory limit";
    if (!limit) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages <= 0 || page <= 0) return WC_OK; /* unknown: nothing to compare against */
        limit = (size_t)pages * (size_t)page;
        what = "physical memory";
    }
    double params = 0, work = 0; /* floats so far; doubles hold these sizes exactly */
    for (int i = 0; i < net->nnodes; i++) {
        const wc_node *nd = &net->nodes[i];
        if (nd->op == WC_OP_CONV) {
            params = (double)(nd->b_off + (size_t)nd->K);
            work = fmax(work, (double)wc_conv_workspace_floats_threads(&nd->shape, net->threads));
        }
        const double p = params * (net->training ? 2 : 1);
        const double total = sizeof(float) * (p + (double)upto[i] + work);
        if (total <= (double)limit) continue;
        char t[32], pb[32], ab[32], wb[32], lb[32];
        wc_error("%s: layer %s: the network needs %s by this layer (parameters%s %s, "
                 "activations %s, workspace %s, for %d sample(s) of %dx%dx%d), more than the "
                 "%s of %s",
                 net->arch, nd->name, wc_fmt_bytes(t, sizeof t, total),
                 net->training ? " and gradients" : "", wc_fmt_bytes(pb, sizeof pb, 4 * p),
                 wc_fmt_bytes(ab, sizeof ab, 4 * (double)upto[i]),
                 wc_fmt_bytes(wb, sizeof wb, 4 * work), net->max_N, net->in_channels, net->H,
                 net->W, what, wc_fmt_bytes(lb, sizeof lb, (double)limit));
        return WC_ERR;
    }
    return WC_OK;
}

/* A network parsed, shaped and planned (its buffers' offsets in *offset, the nodes' arena ends
 * in *upto, both the caller's to free), nothing large allocated yet; NULL after logging. */
static wc_net *net_planned(const char *arch, const char *spec, int in_channels, int max_N, int H,
                           int W, int mode, size_t **offset, size_t **upto) {
    WC_ASSERT(in_channels > 0 && max_N > 0 && H > 0 && W > 0);
    wc_net *net = WC_CALLOC(1, sizeof *net);
    snprintf(net->arch, sizeof net->arch, "%s", arch);
    net->in_channels = in_channels, net->max_N = max_N, net->H = H, net->W = W;
    net->training = mode == WC_NET_TRAIN;
    net->threads = default_threads;
    net->nnodes = wc_netspec_parse(arch, spec, &net->nodes);
    *offset = *upto = NULL;
    if (net->nnodes < 0) {
        net->nnodes = 0;
        wc_net_destroy(net);
        return NULL;
    }
    /* everything is sized and checked before the large buffers are allocated */
    int ok = infer_shapes(net) == WC_OK && check_reach(net) == WC_OK;
    if (ok) {
        *offset = WC_CALLOC(net->nnodes, sizeof(size_t));
        *upto = WC_CALLOC(net->nnodes, sizeof(size_t));
        wc_netplan_buffers(net, *offset, *upto);
        ok = check_memory(net, *upto) == WC_OK;
    }
    if (!ok) {
        free(*offset), free(*upto);
        *offset = *upto = NULL;
        wc_net_destroy(net);
        return NULL;
    }
    return net;
}

int wc_net_plan(const char *arch, const char *spec, int in_channels, int max_N, int H, int W,
                int mode, wc_memory_plan *plan) {
    size_t *offset, *upto;
    wc_net *net = net_planned(arch, spec, in_channels, max_N, H, W, mode, &offset, &upto);
    if (!net) return WC_ERR;
    plan->params = net->nparams * sizeof(float);
    plan->grads = net->training ? plan->params : 0;
    plan->activations = net->arena_floats * sizeof(float);
    plan->workspace = net->work_floats * sizeof(float);
    free(offset), free(upto);
    wc_net_destroy(net);
    return WC_OK;
}

wc_net *wc_net_create(const char *arch, const char *spec, int in_channels, int max_N, int H, int W,
                      int mode) {
    size_t *offset, *upto;
    wc_net *net = net_planned(arch, spec, in_channels, max_N, H, W, mode, &offset, &upto);
    if (!net) return NULL;
    net->spec = wc_strdup(spec);
    build_tensor_table(net);
    net->params = WC_CALLOC_FOR(net->nparams, sizeof(float), "the network's parameters");
    if (net->training)
        net->grads = WC_CALLOC_FOR(net->nparams, sizeof(float), "the network's gradients");
    net->arena = WC_CALLOC_FOR(net->arena_floats, sizeof(float), "the network's activations");
    net->work = WC_CALLOC_FOR(net->work_floats, sizeof(float), "the network's workspace");
    wc_netplan_carve(net, offset);
    free(offset), free(upto);
    if (net->training) wc_netplan_gradient_writes(net);
    if (net->threads > 1) {
        openblas_set_num_threads(1); /* inside our tasks: its threads would compete */
        net->pool = wc_pool_create(net->threads);
    }
    for (int i = 0; i < net->nnodes; i++) {
        const wc_node *nd = &net->nodes[i];
        if (nd->op == WC_OP_CONV)
            net->flops_forward += 2.0 * nd->K * nd->shape.C * nd->KH * nd->KW * nd->H * nd->W;
    }
    return net;
}

int wc_net_check_output(const char *arch, const char *spec) {
    wc_node *nodes;
    const int n_nodes = wc_netspec_parse(arch, spec, &nodes);
    if (n_nodes < 0) return WC_ERR;
    /* max-pools and upsamples keep a ReLU's sign: an output that passed through one is a logit
     * never below 0, a probability never below 0.5, and the map could call no pixel safe */
    const wc_node *last = &nodes[n_nodes - 1], *n = last;
    while ((n->op == WC_OP_MAXPOOL || n->op == WC_OP_UPSAMPLE) && n->in[0] >= 0)
        n = &nodes[n->in[0]];
    int rc = WC_OK;
    if (n->op == WC_OP_RELU) {
        char what[2 * WC_NAME_MAX + 64];
        if (n == last)
            snprintf(what, sizeof what, "is a relu");
        else
            snprintf(what, sizeof what, "passes on the output of the relu %s", n->name);
        wc_error("%s: the last layer (%s) %s: the logits are never below 0, so no pixel's "
                 "probability could fall below 0.5; end the network with a conv (as unet-lite "
                 "ends with its 1x1 conv h)",
                 arch, last->name, what);
        rc = WC_ERR;
    }
    free(nodes);
    return rc;
}

int wc_net_describe(const char *arch, const char *spec, int in_channels, int H, int W,
                    wc_net_facts *facts) {
    WC_ASSERT(in_channels > 0 && H > 0 && W > 0);
    wc_net net = {.in_channels = in_channels, .max_N = 1, .H = H, .W = W};
    snprintf(net.arch, sizeof net.arch, "%s", arch);
    net.nnodes = wc_netspec_parse(arch, spec, &net.nodes);
    if (net.nnodes < 0) return WC_ERR;
    int rc = infer_shapes(&net) == WC_OK && check_reach(&net) == WC_OK ? WC_OK : WC_ERR;
    memset(facts, 0, sizeof *facts);
    facts->nparams = net.nparams;
    for (int i = 0; i < net.nnodes; i++) facts->ntensors += 2 * (net.nodes[i].op == WC_OP_CONV);
    if (rc == WC_OK) {
        int64_t radius, align, exact;
        receptive_field(&net, &radius, &align, &exact, NULL);
        facts->radius = (int)radius, facts->alignment = (int)align;
        facts->exact_alignment = (int)WC_MIN(lcm64(align, exact), REACH_CAP);
    }
    free(net.nodes);
    return rc;
}

void wc_net_destroy(wc_net *net) {
    if (!net) return;
    free(net->spec);
    free(net->nodes);
    free(net->tensors);
    free(net->params);
    free(net->grads);
    free(net->arena);
    free(net->work);
    free(net->zero_grads);
    wc_pool_destroy(net->pool);
    free(net);
}

/* The convolution whose bias is a constant of every output pixel: the last layer, or the
 * 1-channel convolution a spec's last layers only upsample or max-pool (a coarse head), which
 * carry a constant through as it is. NULL when something else (a ReLU) comes between. */
static const wc_node *output_conv(const wc_net *net) {
    const wc_node *nd = &net->nodes[net->nnodes - 1];
    while (nd->op == WC_OP_UPSAMPLE || nd->op == WC_OP_MAXPOOL) nd = &net->nodes[nd->in[0]];
    return nd->op == WC_OP_CONV && nd->C == 1 ? nd : NULL;
}

void wc_net_init_params(wc_net *net, uint64_t seed, double prior) {
    for (int t = 0; t < net->ntensors; t++) {
        const wc_tensor *tn = &net->tensors[t];
        float *p = net->params + tn->offset;
        if (!tn->is_weight) {
            memset(p, 0, tn->count * sizeof(float));
            continue;
        }
        /* Find the node to know whether a ReLU follows (He) or not (PyTorch's default). */
        int node = -1, relu_follows = 0;
        for (int i = 0; i < net->nnodes; i++)
            if (net->nodes[i].op == WC_OP_CONV && net->nodes[i].w_off == tn->offset) node = i;
        for (int i = 0; i < net->nnodes; i++)
            if (net->nodes[i].op == WC_OP_RELU && net->nodes[i].in[0] == node) relu_follows = 1;
        double fan_in = (double)tn->shape[1] * tn->shape[2] * tn->shape[3];
        double bound = relu_follows ? sqrt(6.0 / fan_in) : 1.0 / sqrt(fan_in);
        wc_rng r;
        wc_rng_seed(&r, seed, WC_STREAM_INIT, (uint64_t)t); /* per tensor: layout-independent */
        for (size_t i = 0; i < tn->count; i++)
            p[i] = (float)(bound * (2.0 * wc_rng_uniform(&r) - 1.0));
    }
    /* The output bias: logit of the label rate, so training does not first spend steps
     * learning how rare fire is. */
    const wc_node *last = &net->nodes[net->nnodes - 1];
    const wc_node *head = output_conv(net);
    if (head && prior > 0 && prior < 1)
        net->params[head->b_off] = (float)log(prior / (1.0 - prior));
    /* A convex model (the output layer is the only one with parameters: the logistic
     * baseline) has no symmetry to break: it starts from zero weights, i.e. exactly the
     * constant predictor at the base rate, and can only improve on it. Random weights would
     * start it at an arbitrary, usually worse, ranking. */
    int convs = 0;
    for (int i = 0; i < net->nnodes; i++) convs += net->nodes[i].op == WC_OP_CONV;
    if (convs == 1 && last->op == WC_OP_CONV)
        memset(net->params + last->w_off, 0, sizeof(float) * (size_t)(last->b_off - last->w_off));
}

float *wc_net_input(wc_net *net) {
    return net->nodes[0].out;
}
float *wc_net_output(wc_net *net) {
    return net->nodes[net->nnodes - 1].out;
}
float *wc_net_output_grad(wc_net *net) {
    return net->nodes[net->nnodes - 1].grad;
}

/* ---- forward and backward ---------------------------------------------------------------- */

/* A layer other than a convolution, over the first N samples, as tasks of (sample, share of
 * the channels): every task writes its own planes, so the split changes no result. */
typedef struct {
    const wc_net *net;
    const wc_node *nd;
    int parts; /* tasks per sample */
    int backward;
} layer_job;

/* dst (+)= src over C planes of HW floats of one sample (a concatenation's copied input). */
static void copy_planes(float *restrict dst, const float *restrict src, size_t n, int add) {
    if (add)
        for (size_t i = 0; i < n; i++) dst[i] += src[i];
    else
        memcpy(dst, src, sizeof(float) * n);
}

static void layer_task(void *arg, int task, int thread) {
    const layer_job *j = arg;
    const wc_net *net = j->net;
    const wc_node *nd = j->nd, *a = &net->nodes[nd->in[0]];
    const int n = task / j->parts;
    long c0, c1;
    wc_pool_share(nd->C, task % j->parts, j->parts, &c0, &c1);
    const int P = (int)(c1 - c0);
    if (P == 0) return;
    const size_t hw = (size_t)nd->H * nd->W, ahw = (size_t)a->H * a->W;
    const size_t at = (size_t)n * nd->sample + (size_t)c0 * hw;   /* this node's planes */
    const size_t at_a = (size_t)n * a->sample + (size_t)c0 * ahw; /* its input's */
    if (nd->op == WC_OP_CONCAT) { /* the inputs that are not views, copied or added back */
        for (int k = 0; k < 2; k++) {
            const wc_node *in = &net->nodes[nd->in[k]];
            if (wc_netplan_is_view_input(net, (int)(nd - net->nodes), k)) continue;
            const long lo = k ? a->C : 0, hi = k ? nd->C : a->C; /* its channels in the output */
            const long p0 = WC_MAX(c0, lo), p1 = WC_MIN(c1, hi);
            if (p1 <= p0) continue;
            float *cat = (j->backward ? nd->grad : nd->out) + (size_t)n * nd->sample + p0 * hw;
            const size_t off = (size_t)n * in->sample + (size_t)(p0 - lo) * hw;
            const size_t len = (size_t)(p1 - p0) * hw;
            if (!j->backward)
                copy_planes(cat, in->out + off, len, 0);
            else if (in->grad)
                copy_planes(in->grad + off, cat, len, !nd->write_in[k]);
        }
        return;
    }
    if (!j->backward) {
        switch (nd->op) {
        case WC_OP_RELU:
            wc_relu_forward(nd->out + at, a->out + at_a, P * hw);
            break;
        case WC_OP_MAXPOOL:
            wc_maxpool2_forward(nd->out + at, a->out + at_a, P, a->H, a->W);
            break;
        case WC_OP_UPSAMPLE:
            wc_upsample2_forward(nd->out + at, a->out + at_a, P, a->H, a->W);
            break;
        default:
            WC_ASSERT(0);
        }
        return;
    }
    const int write = nd->write_in[0];
    float *da = a->grad ? a->grad + at_a : NULL;
    const float *d = nd->grad + at;
    switch (nd->op) {
    case WC_OP_RELU:
        if (nd->inplace)
            wc_relu_backward_inplace(nd->grad + at, nd->out + at, P * hw);
        else if (da)
            (write ? wc_relu_backward_write : wc_relu_backward)(da, d, nd->out + at, P * hw);
        break;
    case WC_OP_MAXPOOL:
        if (da)
            (write ? wc_maxpool2_backward_write : wc_maxpool2_backward)(da, d, a->out + at_a, P,
                                                                        a->H, a->W);
        break;
    case WC_OP_UPSAMPLE:
        if (da) (write ? wc_upsample2_backward_write : wc_upsample2_backward)(da, d, P, a->H, a->W);
        break;
    default:
        WC_ASSERT(0);
    }
}

static void run_layer(wc_net *net, const wc_node *nd, int N, int backward) {
    /* a few tasks per thread, whole samples when there are samples enough */
    int parts = WC_MIN(nd->C, WC_MAX(1, (4 * net->threads + N - 1) / N));
    /* a tensor concatenated with itself, copied: both halves of a sample's gradient go to the
     * same planes, written then added, so by one task */
    if (backward && nd->op == WC_OP_CONCAT && nd->in[0] == nd->in[1]) parts = 1;
    layer_job j = {net, nd, net->threads > 1 ? parts : 1, backward};
    wc_pool_run(net->pool, N * j.parts, layer_task, &j);
}

void wc_net_forward(wc_net *net, int N) {
    WC_ASSERT(N > 0 && N <= net->max_N);
    for (int i = 1; i < net->nnodes; i++) {
        wc_node *nd = &net->nodes[i];
        const wc_node *a = &net->nodes[nd->in[0]];
        switch (nd->op) {
        case WC_OP_CONV: {
            wc_conv_shape s = nd->shape;
            s.N = N;
            wc_conv2d_forward_ex(nd->out, a->out, net->params + nd->w_off, net->params + nd->b_off,
                                 &s, nd->fuse_relu ? WC_CONV_RELU : 0, net->pool, net->work);
            break;
        }
        case WC_OP_RELU:
            if (!nd->fwd_fused) run_layer(net, nd, N, 0);
            break;
        case WC_OP_MAXPOOL:
        case WC_OP_UPSAMPLE:
        case WC_OP_CONCAT:
            run_layer(net, nd, N, 0);
            break;
        case WC_OP_INPUT:
            WC_ASSERT(0);
            break;
        }
    }
}

void wc_net_backward(wc_net *net, int N) {
    WC_ASSERT(net->training && N > 0 && N <= net->max_N);
    for (int z = 0; z < net->nzero; z++) {
        const wc_node *nd = &net->nodes[net->zero_grads[z]];
        memset(nd->grad, 0, sizeof(float) * N * nd->sample);
    }
    for (int i = net->nnodes - 1; i >= 1; i--) {
        wc_node *nd = &net->nodes[i];
        const wc_node *a = &net->nodes[nd->in[0]];
        switch (nd->op) {
        case WC_OP_CONV: {
            wc_conv_shape s = nd->shape;
            s.N = N;
            int flags = nd->write_in[0] ? WC_CONV_DINP_WRITE : 0;
            if (a->op == WC_OP_RELU && a->bwd_fused) flags |= WC_CONV_DINP_RELU_MASK;
            /* a NULL gradient for the network input: nothing to propagate there */
            wc_conv2d_backward_ex(a->grad, net->grads + nd->w_off, net->grads + nd->b_off, nd->grad,
                                  a->out, net->params + nd->w_off, &s, flags, net->pool, net->work);
            break;
        }
        case WC_OP_RELU:
            if (!nd->bwd_fused) run_layer(net, nd, N, 1);
            break;
        case WC_OP_MAXPOOL:
        case WC_OP_UPSAMPLE:
        case WC_OP_CONCAT:
            run_layer(net, nd, N, 1);
            break;
        case WC_OP_INPUT:
            WC_ASSERT(0);
            break;
        }
        if (net->backward_hook) net->backward_hook(net->backward_hook_ctx, nd);
    }
}

/* ---- queries ----------------------------------------------------------------------------- */

const wc_tensor *wc_net_find_tensor(const wc_net *net, const char *name) {
    for (int t = 0; t < net->ntensors; t++)
        if (strcmp(net->tensors[t].name, name) == 0) return &net->tensors[t];
    return NULL;
}

void wc_net_memory_plan(const wc_net *net, wc_memory_plan *plan) {
    plan->params = net->nparams * sizeof(float);
    plan->grads = net->grads ? net->nparams * sizeof(float) : 0;
    plan->activations = net->arena_floats * sizeof(float);
    plan->workspace = net->work_floats * sizeof(float);
}

void wc_net_receptive_field(const wc_net *net, int *radius, int *alignment) {
    int64_t r, a;
    receptive_field(net, &r, &a, NULL, NULL);
    /* wc_net_create refused any network beyond WC_NET_MAX_REACH */
    WC_ASSERT(r <= WC_NET_MAX_REACH && a <= WC_NET_MAX_REACH);
    *radius = (int)r;
    *alignment = (int)a;
}
