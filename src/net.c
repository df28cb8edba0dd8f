/* net.c: parsing a network spec, laying out its parameters and buffers, running it forward
 * and backward. See net.h for the spec language and the memory rules. A spec may come from an
 * untrusted checkpoint: every size is checked before it is stored or allocated, and the
 * memory before any large buffer exists. Not here: the layers' arithmetic (conv.c, layers.c). */
#include "wildcpu/net.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wildcpu/rng.h"
#include "wildcpu/util.h"

/* Exactly the network of ../shared/bench/torch_ref.py (UNetLite, w = 32): the same layers in
 * the same order, the same concatenation order ([upsampled, skip]), the same tensor names. */
static const char UNET_LITE_SPEC[] =
    "# unet-lite: the network of shared/bench/torch_ref.py, width 32\n"
    "input    x\n"
    "conv     e1.0  x     out=32  k=3 pad=1\n"
    "relu     e1.1  e1.0\n"
    "conv     e1.2  e1.1  out=32  k=3 pad=1\n"
    "relu     e1.3  e1.2\n"
    "maxpool  p1    e1.3\n"
    "conv     e2.0  p1    out=64  k=3 pad=1\n"
    "relu     e2.1  e2.0\n"
    "conv     e2.2  e2.1  out=64  k=3 pad=1\n"
    "relu     e2.3  e2.2\n"
    "maxpool  p2    e2.3\n"
    "conv     b.0   p2    out=128 k=3 pad=1\n"
    "relu     b.1   b.0\n"
    "conv     b.2   b.1   out=128 k=3 pad=1\n"
    "relu     b.3   b.2\n"
    "upsample u2    b.3\n"
    "concat   c2    u2 e2.3\n"
    "conv     d2.0  c2    out=64  k=3 pad=1\n"
    "relu     d2.1  d2.0\n"
    "conv     d2.2  d2.1  out=64  k=3 pad=1\n"
    "relu     d2.3  d2.2\n"
    "upsample u1    d2.3\n"
    "concat   c1    u1 e1.3\n"
    "conv     d1.0  c1    out=32  k=3 pad=1\n"
    "relu     d1.1  d1.0\n"
    "conv     d1.2  d1.1  out=32  k=3 pad=1\n"
    "relu     d1.3  d1.2\n"
    "conv     h     d1.3  out=1   k=1\n";

/* The per-pixel baseline: logistic regression on the pixel's own features. */
static const char LOGISTIC_SPEC[] = "# logistic: one 1x1 convolution, the per-pixel baseline\n"
                                    "input    x\n"
                                    "conv     h     x     out=1   k=1\n";

const char *wc_net_builtin_spec(const char *arch) {
    if (strcmp(arch, "unet-lite") == 0) return UNET_LITE_SPEC;
    if (strcmp(arch, "logistic") == 0) return LOGISTIC_SPEC;
    return NULL;
}

/* ---- parsing ---------------------------------------------------------------------------- */

/* Option values are 0 to 2^20: no kernel, stride, padding or width has use beyond, and the
 * bound keeps sums of a few of them far from overflowing an int. */
#define MAX_OPTION (1 << 20)

static int find_node(const wc_node *nodes, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(nodes[i].name, name) == 0) return i;
    return -1;
}

static int parse_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v > MAX_OPTION) return -1;
    *out = (int)v;
    return 0;
}

/* Letters, digits, '_', '.', '-' (not locale-dependent): a name becomes a tensor name written
 * unquoted into an exported file's JSON header, and must never read as an option (key=value). */
static int good_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n >= WC_NAME_MAX) return 0;
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* Parses one layer line (comment stripped, at least one visible character) into nodes[n]. */
static int parse_line(wc_node *nodes, int n, char *line, const char *arch, int lineno) {
    char *tok[WC_NET_MAX_TOKENS], *save = NULL;
    int ntok = 0;
    for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (ntok == WC_NET_MAX_TOKENS) {
            /* words beyond the limit were once dropped silently: an option lost without a word */
            wc_error("%s:%d: more than %d words on one line (a layer has at most 10)", arch,
                     lineno, WC_NET_MAX_TOKENS);
            return WC_ERR;
        }
        tok[ntok++] = t;
    }
    WC_ASSERT(ntok > 0);
    wc_node *nd = &nodes[n];
    memset(nd, 0, sizeof *nd);
    nd->in[0] = nd->in[1] = -1;
    nd->stride = 1;
    nd->KH = nd->KW = -1;
    static const struct {
        const char *word;
        wc_op op;
        int ninputs;
    } ops[] = {{"input", WC_OP_INPUT, 0},     {"conv", WC_OP_CONV, 1},
               {"relu", WC_OP_RELU, 1},       {"maxpool", WC_OP_MAXPOOL, 1},
               {"upsample", WC_OP_UPSAMPLE, 1}, {"concat", WC_OP_CONCAT, 2}};
    int which = -1;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(tok[0], ops[i].word) == 0) which = (int)i;
    if (which < 0) {
        wc_error("%s:%d: unknown layer type '%s' (known: input conv relu maxpool upsample concat)",
                 arch, lineno, tok[0]);
        return WC_ERR;
    }
    nd->op = ops[which].op;
    if (ntok < 2 || !good_name(tok[1])) {
        wc_error("%s:%d: a layer needs a name of 1 to %d letters, digits, '_', '.' or '-'%s%s%s",
                 arch, lineno, WC_NAME_MAX - 1, ntok < 2 ? "" : ", not '",
                 ntok < 2 ? "" : tok[1], ntok < 2 ? "" : "'");
        return WC_ERR;
    }
    strcpy(nd->name, tok[1]);
    if (find_node(nodes, n, nd->name) >= 0) {
        wc_error("%s:%d: layer name '%s' used twice", arch, lineno, nd->name);
        return WC_ERR;
    }
    if ((n == 0) != (nd->op == WC_OP_INPUT)) {
        wc_error("%s:%d: the first layer, and only it, must be 'input'", arch, lineno);
        return WC_ERR;
    }
    /* conv's options; k= sets both kh and kw, so it counts as giving each of them */
    static const char *const keys[] = {"out", "kh", "kw", "stride", "pad", "k"};
    int *const dst[] = {&nd->K, &nd->KH, &nd->KW, &nd->stride, &nd->pad};
    unsigned seen = 0;
    int ninputs = 0;
    for (int t = 2; t < ntok; t++) {
        char *eq = strchr(tok[t], '=');
        if (!eq) {
            if (ninputs == ops[which].ninputs) {
                wc_error("%s:%d: %s takes %d input(s), got more", arch, lineno, tok[0],
                         ops[which].ninputs);
                return WC_ERR;
            }
            int src = find_node(nodes, n, tok[t]);
            if (src < 0) {
                wc_error("%s:%d: input '%s' is not defined above", arch, lineno, tok[t]);
                return WC_ERR;
            }
            nd->in[ninputs++] = src;
            continue;
        }
        *eq = '\0';
        const char *key = tok[t], *val = eq + 1;
        if (nd->op != WC_OP_CONV) {
            wc_error("%s:%d: %s takes no option '%s'", arch, lineno, tok[0], key);
            return WC_ERR;
        }
        int k = -1, v;
        for (int i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++)
            if (strcmp(key, keys[i]) == 0) k = i;
        if (k < 0) {
            wc_error("%s:%d: unknown option '%s' (conv takes out, k, kh, kw, stride, pad)", arch,
                     lineno, key);
            return WC_ERR;
        }
        unsigned bits = k == 5 ? 1u << 1 | 1u << 2 : 1u << k;
        if (seen & bits) {
            wc_error("%s:%d: option %s given twice (k= gives both kh= and kw=)", arch, lineno, key);
            return WC_ERR;
        }
        seen |= bits;
        if (parse_int(val, &v) || (k == 5 && v < 1)) {
            wc_error("%s:%d: option %s needs an integer from %d to %d, got '%s'", arch, lineno,
                     key, k == 5, MAX_OPTION, val);
            return WC_ERR;
        }
        if (k == 5)
            nd->KH = nd->KW = v;
        else
            *dst[k] = v;
    }
    if (ninputs != ops[which].ninputs) {
        wc_error("%s:%d: %s takes %d input(s), got %d", arch, lineno, tok[0], ops[which].ninputs,
                 ninputs);
        return WC_ERR;
    }
    if (nd->op == WC_OP_CONV && (nd->K < 1 || nd->KH < 1 || nd->KW < 1 || nd->stride < 1)) {
        wc_error("%s:%d: conv needs out=N and k=N (positive), stride >= 1", arch, lineno);
        return WC_ERR;
    }
    return WC_OK;
}

/* Parses the whole spec into a freshly allocated node array; returns the count or -1. The
 * limits (net.h) are checked as the text is read, before anything is sized by it. */
static int parse_spec(const char *arch, const char *spec, wc_node **out_nodes) {
    if (strnlen(spec, (size_t)WC_NET_MAX_SPEC + 1) > WC_NET_MAX_SPEC) {
        wc_error("%s: the spec is longer than %d bytes", arch, WC_NET_MAX_SPEC);
        return -1;
    }
    int cap = 8, n = 0, lineno = 0;
    wc_node *nodes = WC_ALLOC(cap * sizeof *nodes);
    char *text = wc_strdup(spec);
    for (char *l = text, *next; l; l = next) {
        char *nl = strchr(l, '\n');
        next = nl ? nl + 1 : NULL;
        if (nl) *nl = '\0';
        lineno++;
        if (strlen(l) > WC_NET_MAX_LINE) {
            wc_error("%s:%d: a line longer than %d characters", arch, lineno, WC_NET_MAX_LINE);
            goto fail;
        }
        char *hash = strchr(l, '#');
        if (hash) *hash = '\0'; /* a comment may hold anything (UTF-8 prose) */
        int visible = 0;
        for (const char *c = l; *c; c++) {
            unsigned char u = (unsigned char)*c;
            if (u == ' ' || u == '\t' || u == '\r') continue;
            if (u < 0x21 || u > 0x7e) {
                wc_error("%s:%d: character 0x%02x outside a comment (a spec is ASCII text)", arch,
                         lineno, u);
                goto fail;
            }
            visible = 1;
        }
        if (!visible) continue;
        if (n == WC_NET_MAX_LAYERS) {
            wc_error("%s:%d: more than %d layers", arch, lineno, WC_NET_MAX_LAYERS);
            goto fail;
        }
        if (n == cap) {
            wc_node *more = realloc(nodes, (size_t)(cap *= 2) * sizeof *nodes);
            if (!more) wc_fatal("out of memory parsing the spec of %s", arch);
            nodes = more;
        }
        if (parse_line(nodes, n, l, arch, lineno) != WC_OK) goto fail;
        n++;
    }
    if (n < 2) {
        wc_error("%s: a network needs an input and at least one layer", arch);
        goto fail;
    }
    free(text);
    *out_nodes = nodes;
    return n;
fail:
    free(text);
    free(nodes);
    return -1;
}

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
             * in its own loops and in the transposed one of its backward pass (conv.c) */
            if ((int64_t)a->H + 2 * nd->pad + nd->KH > INT_MAX ||
                (int64_t)a->W + 2 * nd->pad + nd->KW > INT_MAX) {
                wc_error("%s: layer %s: padding %d and a %dx%d kernel on a %dx%d input overflow "
                         "its coordinates",
                         net->arch, nd->name, nd->pad, nd->KH, nd->KW, a->H, a->W);
                return WC_ERR;
            }
            if (a->H + 2 * nd->pad < nd->KH || a->W + 2 * nd->pad < nd->KW) {
                wc_error("%s: layer %s: a %dx%d kernel does not fit its %dx%d input", net->arch,
                         nd->name, nd->KH, nd->KW, a->H, a->W);
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
                         net->arch, nd->name, a->H, a->W);
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
                         nd->name, a->name, a->H, a->W, b->name, b->H, b->W);
                return WC_ERR;
            }
            C = (int64_t)a->C + b->C, H = a->H, W = a->W;
            break;
        default: WC_ASSERT(0); return WC_ERR;
        }
        if (output_fits(net, nd, C, H, W) != WC_OK) return WC_ERR;
        nd->C = (int)C, nd->H = (int)H, nd->W = (int)W;
    }
    const wc_node *last = &net->nodes[net->nnodes - 1];
    if (last->C != 1 || last->H != net->H || last->W != net->W) {
        wc_error("%s: the last layer (%s) must give 1 channel at the input's size %dx%d, "
                 "it gives %d channel(s) at %dx%d",
                 net->arch, last->name, net->H, net->W, last->C, last->H, last->W);
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

static void receptive_field(const wc_net *net, int64_t *radius, int64_t *alignment,
                            int64_t *exact, int *culprit) {
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
                *exact = lcm64(*exact, WC_MIN(scale[a], REACH_CAP) *
                                           wc_conv_output_tile(nd->KH, nd->KW, nd->stride, nd->pad));
            scale[i] = scale[a] * nd->stride;
            reach[i] = reach[a] + scale[a] * WC_MAX(WC_MAX(nd->pad, nd->KH - 1 - nd->pad),
                                                    nd->KW - 1 - nd->pad);
            break;
        case WC_OP_MAXPOOL: scale[i] = 2 * scale[a], reach[i] = reach[a]; break;
        case WC_OP_UPSAMPLE:
            scale[i] = WC_MAX(1, scale[a] / 2), reach[i] = reach[a] + scale[a];
            break;
        case WC_OP_CONCAT:
            scale[i] = WC_MIN(scale[a], scale[b]), reach[i] = WC_MAX(reach[a], reach[b]);
            break;
        default: scale[i] = scale[a], reach[i] = reach[a]; break;
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

/* ---- buffers: in-place ReLUs, concatenation views, fusion, lifetimes ---------------------- */

/* The node whose buffers node i uses: itself, or for an in-place ReLU its input's owner. */
static int owner(const wc_net *net, int i) {
    while (net->nodes[i].inplace) i = net->nodes[i].in[0];
    return i;
}

/* The node that owns the arena space node i's buffers lie in (views resolved). */
static int storage(const wc_net *net, int i) {
    i = owner(net, i);
    while (net->nodes[i].view >= 0) i = owner(net, net->nodes[i].view);
    return i;
}

/* Decides in-place ReLUs, concatenation views and fused ReLUs. */
static void plan_sharing(wc_net *net) {
    const int n = net->nnodes;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2; j++)
            if (net->nodes[i].in[j] >= 0) net->nodes[net->nodes[i].in[j]].consumers++;
    for (int i = 0; i < n; i++) {
        wc_node *nd = &net->nodes[i];
        const wc_node *a = nd->in[0] >= 0 ? &net->nodes[nd->in[0]] : NULL;
        nd->view = -1;
        /* The network input is kept intact: the first convolution's backward reads it. */
        nd->inplace = nd->op == WC_OP_RELU && a->op != WC_OP_INPUT && a->consumers == 1;
        /* its input is then read by nobody else, so it never exists without the ReLU */
        nd->fwd_fused = nd->inplace && a->op == WC_OP_CONV;
        if (nd->fwd_fused) net->nodes[nd->in[0]].fuse_relu = 1;
    }
    /* a ReLU read by one convolution alone: that convolution's backward applies its mask */
    for (int i = 0; i < n; i++) {
        const wc_node *nd = &net->nodes[i];
        if (nd->op == WC_OP_CONV && net->nodes[nd->in[0]].op == WC_OP_RELU &&
            net->nodes[nd->in[0]].inplace && net->nodes[nd->in[0]].consumers == 1)
            net->nodes[nd->in[0]].bwd_fused = 1;
    }
    /* A concatenation's inputs become views into its buffer when their owners are free to: not
     * the network's input or output (the caller's, contiguous), not already a view, not the
     * same buffer twice. Otherwise that input is copied. */
    for (int i = 0; i < n; i++) {
        if (net->nodes[i].op != WC_OP_CONCAT) continue;
        const int o0 = owner(net, net->nodes[i].in[0]), o1 = owner(net, net->nodes[i].in[1]);
        for (int j = 0; j < 2; j++) {
            const int o = j ? o1 : o0;
            if (o == 0 || o == n - 1 || net->nodes[o].view >= 0 || (j == 1 && o == o0)) continue;
            net->nodes[o].view = i;
        }
    }
}

/* Whether input k of concatenation c is a view into it (else it is copied): its owner is
 * viewed in c, and for the second input, it is not the first's owner too. */
static int is_view_input(const wc_net *net, int c, int k) {
    const wc_node *nd = &net->nodes[c];
    const int o = owner(net, nd->in[k]);
    return net->nodes[o].view == c && !(k == 1 && o == owner(net, nd->in[0]));
}

/* Offset, in floats, of owner o's buffer inside the sample of the concatenation it is a view
 * into. */
static size_t view_offset(const wc_net *net, int o) {
    const wc_node *c = &net->nodes[net->nodes[o].view];
    const int first = owner(net, c->in[0]) == o;
    return first ? 0 : (size_t)net->nodes[c->in[0]].C * c->H * c->W;
}

/* The floats one micro-batch of node i's own buffer takes (an owner that is not a view). */
static size_t buffer_floats(const wc_net *net, int i) {
    const wc_node *nd = &net->nodes[i];
    return (size_t)net->max_N * nd->C * nd->H * nd->W;
}

/* Inference keeps a buffer only while a later layer still reads it: offsets into one arena,
 * assigned first-fit from a list of freed extents as the graph runs in order. A buffer is
 * placed when the first node writing into it runs (a concatenation's buffer when its first
 * input is produced) and freed after the last node reading any part of it. Returns the arena
 * size in floats; upto[i] is its size once node i's buffers are placed. */
static size_t plan_inference_arena(wc_net *net, size_t *offset, size_t *upto) {
    const int n = net->nnodes;
    int *last = WC_ALLOC(sizeof(int) * n), *first = WC_ALLOC(sizeof(int) * n);
    for (int i = 0; i < n; i++) last[i] = -1, first[i] = n;
    /* the input and the output belong to the caller across runs: never reused */
    for (int i = 0; i < n; i++) {
        const int s = storage(net, i);
        first[s] = WC_MIN(first[s], i);
        last[s] = WC_MAX(last[s], i == 0 || i == n - 1 ? n : i);
        for (int j = 0; j < 2; j++)
            if (net->nodes[i].in[j] >= 0) last[storage(net, net->nodes[i].in[j])] = WC_MAX(last[storage(net, net->nodes[i].in[j])], i);
    }
    size_t *free_off = WC_ALLOC(sizeof(size_t) * (n + 1)), *free_len = WC_ALLOC(sizeof(size_t) * (n + 1));
    int nfree = 0;
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < n; s++) {
            if (first[s] != i) continue;
            size_t need = buffer_floats(net, s), best = (size_t)-1;
            int pick = -1;
            for (int f = 0; f < nfree; f++)
                if (free_len[f] >= need && free_len[f] < best) pick = f, best = free_len[f];
            if (pick >= 0) {
                offset[s] = free_off[pick];
                free_off[pick] += need, free_len[pick] -= need;
            } else {
                offset[s] = top;
                top += need;
            }
        }
        upto[i] = top;
        /* release what no later layer reads */
        for (int s = 0; s < n; s++) {
            if (last[s] != i || first[s] == n) continue;
            free_off[nfree] = offset[s];
            free_len[nfree++] = buffer_floats(net, s);
        }
        /* merge adjacent free extents so large buffers can reuse them */
        for (int a = 0; a < nfree; a++)
            for (int b = 0; b < nfree; b++)
                if (a != b && free_len[a] && free_off[a] + free_len[a] == free_off[b]) {
                    free_len[a] += free_len[b];
                    free_len[b] = 0;
                }
        int w = 0;
        for (int f = 0; f < nfree; f++)
            if (free_len[f]) free_off[w] = free_off[f], free_len[w++] = free_len[f];
        nfree = w;
    }
    free(last), free(first), free(free_off), free(free_len);
    return top;
}

/* Whether owner v's buffers lie inside owner o's (v itself, or a view of a view ... of o). */
static int inside(const wc_net *net, int v, int o) {
    for (; v >= 0; v = net->nodes[v].view >= 0 ? owner(net, net->nodes[v].view) : -1)
        if (v == o) return 1;
    return 0;
}

/* Whether node i's backward reads its own gradient: every layer but a concatenation whose
 * inputs are both views (its gradient already is theirs) and a ReLU whose mask its consumer
 * applies. */
static int reads_grad(const wc_net *net, int i) {
    const wc_node *nd = &net->nodes[i];
    if (nd->op == WC_OP_RELU) return !nd->bwd_fused;
    if (nd->op != WC_OP_CONCAT) return 1;
    return !is_view_input(net, i, 0) || !is_view_input(net, i, 1);
}

/* Which backward contributions write their input's gradient (the first one to reach it) and
 * which add, by running the backward order over "written" marks per buffer owner: writing an
 * owner's gradient writes the views inside it too. A gradient read before anything wrote it (a
 * node nobody consumes), or written as a whole after a view inside it was (a view contributed
 * to before its concatenation's gradient), instead has its storage zeroed first and every
 * contribution to it adds; the plan is then run again. Sets write_in and the zeroed list. */
static void plan_gradient_writes(wc_net *net) {
    const int n = net->nnodes, head = n - 1;
    char *zero = WC_CALLOC(n, 1), *written = WC_CALLOC(n, 1);
    for (int again = 1; again;) {
        again = 0;
        memset(written, 0, n);
        for (int v = 0; v < n; v++) written[v] = inside(net, owner(net, v), owner(net, head));
        for (int i = head; i >= 1 && !again; i--) {
            wc_node *nd = &net->nodes[i];
            nd->write_in[0] = nd->write_in[1] = 0;
            const int self = owner(net, i);
            if (reads_grad(net, i) && !written[self] && !zero[storage(net, i)]) {
                zero[storage(net, i)] = 1, again = 1;
                break;
            }
            if (nd->op == WC_OP_RELU && nd->inplace) continue; /* a mask in place */
            for (int j = 0; j < 2 && !again; j++) {
                const int a = nd->in[j];
                /* the network input has no gradient; a view receives its part already */
                if (a <= 0 || (nd->op == WC_OP_CONCAT && is_view_input(net, i, j)))
                    continue;
                const int o = owner(net, a);
                if (zero[storage(net, a)] || written[o]) continue; /* adds */
                for (int v = 0; v < n && !again; v++)
                    if (v != o && written[v] && inside(net, v, o)) zero[storage(net, a)] = 1, again = 1;
                if (again) break;
                nd->write_in[j] = 1;
                for (int v = 0; v < n; v++)
                    if (inside(net, owner(net, v), o)) written[v] = 1;
            }
        }
    }
    net->nzero = 0;
    net->zero_grads = WC_ALLOC(sizeof(int) * n);
    for (int i = 0; i < n; i++)
        if (zero[i]) net->zero_grads[net->nzero++] = i;
    free(zero), free(written);
}

/* Plans every activation in one arena, allocating nothing large: in training every activation
 * and gradient lives through the step (backward reads them), a buffer's gradient right after
 * it; in inference buffers are reused once their last reader has run. offset[i]: the buffer
 * of owner i in the arena; upto[i]: the arena's size once node i is placed (what the memory
 * check reports). Sets arena_floats and work_floats. */
static void plan_buffers(wc_net *net, size_t *offset, size_t *upto) {
    plan_sharing(net);
    if (!net->training) {
        net->arena_floats = plan_inference_arena(net, offset, upto);
    } else {
        size_t total = 0;
        for (int i = 0; i < net->nnodes; i++) {
            if (storage(net, i) == i) {
                offset[i] = total;
                total += (i == 0 ? 1 : 2) * buffer_floats(net, i);
            }
            upto[i] = total;
        }
        net->arena_floats = total;
    }
    net->work_floats = 0;
    for (int i = 0; i < net->nnodes; i++) {
        if (net->nodes[i].op != WC_OP_CONV) continue;
        const size_t w = wc_conv_workspace_floats_threads(&net->nodes[i].shape, net->threads);
        net->work_floats = WC_MAX(net->work_floats, w);
    }
}

/* Points every node at its buffers in the allocated arena, as plan_buffers placed them: an
 * owner of its own at its offset (its gradient after it), a view inside its concatenation's
 * (placed first: it comes later in the graph, so this runs in reverse order), an in-place ReLU
 * at its input's. Sets the sample strides and the convolutions' shapes to match. */
static void carve_buffers(wc_net *net, const size_t *offset) {
    for (int i = net->nnodes - 1; i >= 0; i--) {
        wc_node *nd = &net->nodes[i];
        if (nd->inplace || nd->view >= 0) continue;
        nd->out = net->arena + offset[i];
        nd->grad = net->training && i > 0 ? nd->out + buffer_floats(net, i) : NULL;
        nd->sample = (size_t)nd->C * nd->H * nd->W;
        for (int v = i - 1; v >= 0; v--) { /* views into it, and views into those */
            wc_node *vn = &net->nodes[v];
            if (vn->inplace || vn->view < 0 || storage(net, v) != i) continue;
            const wc_node *c = &net->nodes[owner(net, vn->view)];
            WC_ASSERT(c->out); /* placed before: a concatenation comes after its inputs */
            vn->out = c->out + view_offset(net, v);
            vn->grad = c->grad ? c->grad + view_offset(net, v) : NULL;
            vn->sample = c->sample;
        }
    }
    for (int i = 0; i < net->nnodes; i++) {
        wc_node *nd = &net->nodes[i];
        if (nd->inplace) {
            const wc_node *o = &net->nodes[owner(net, i)];
            nd->out = o->out, nd->grad = o->grad, nd->sample = o->sample;
        }
        if (nd->op == WC_OP_CONV) {
            nd->shape.in_sample = net->nodes[nd->in[0]].sample;
            nd->shape.out_sample = nd->sample;
        }
    }
}

static int default_threads = 1;

void wc_net_set_threads(int threads) {
    default_threads = WC_MAX(1, threads);
    openblas_set_num_threads(1);
}

int wc_net_get_threads(void) { return default_threads; }

static size_t memory_limit_bytes = 0; /* 0: physical memory */

void wc_net_set_memory_limit(size_t bytes) { memory_limit_bytes = bytes; }

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

wc_net *wc_net_create(const char *arch, const char *spec, int in_channels, int max_N, int H,
                      int W, int mode) {
    WC_ASSERT(in_channels > 0 && max_N > 0 && H > 0 && W > 0);
    wc_net *net = WC_CALLOC(1, sizeof *net);
    snprintf(net->arch, sizeof net->arch, "%s", arch);
    net->in_channels = in_channels, net->max_N = max_N, net->H = H, net->W = W;
    net->training = mode == WC_NET_TRAIN;
    net->threads = default_threads;
    net->nnodes = parse_spec(arch, spec, &net->nodes);
    if (net->nnodes < 0) {
        net->nnodes = 0;
        wc_net_destroy(net);
        return NULL;
    }
    /* everything is sized and checked before the large buffers are allocated */
    size_t *offset = NULL, *upto = NULL;
    int ok = infer_shapes(net) == WC_OK && check_reach(net) == WC_OK;
    if (ok) {
        offset = WC_CALLOC(net->nnodes, sizeof(size_t));
        upto = WC_CALLOC(net->nnodes, sizeof(size_t));
        plan_buffers(net, offset, upto);
        ok = check_memory(net, upto) == WC_OK;
    }
    if (!ok) {
        free(offset), free(upto);
        wc_net_destroy(net);
        return NULL;
    }
    net->spec = wc_strdup(spec);
    build_tensor_table(net);
    net->params = WC_CALLOC(net->nparams, sizeof(float));
    if (net->training) net->grads = WC_CALLOC(net->nparams, sizeof(float));
    net->arena = WC_CALLOC(net->arena_floats, sizeof(float));
    net->work = WC_CALLOC(net->work_floats, sizeof(float));
    carve_buffers(net, offset);
    free(offset), free(upto);
    if (net->training) plan_gradient_writes(net);
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

int wc_net_describe(const char *arch, const char *spec, int in_channels, int H, int W,
                    wc_net_facts *facts) {
    WC_ASSERT(in_channels > 0 && H > 0 && W > 0);
    wc_net net = {.in_channels = in_channels, .max_N = 1, .H = H, .W = W};
    snprintf(net.arch, sizeof net.arch, "%s", arch);
    net.nnodes = parse_spec(arch, spec, &net.nodes);
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
    if (last->op == WC_OP_CONV && prior > 0 && prior < 1)
        net->params[last->b_off] = (float)log(prior / (1.0 - prior));
    /* A convex model (the output layer is the only one with parameters: the logistic
     * baseline) has no symmetry to break: it starts from zero weights, i.e. exactly the
     * constant predictor at the base rate, and can only improve on it. Random weights would
     * start it at an arbitrary, usually worse, ranking. */
    int convs = 0;
    for (int i = 0; i < net->nnodes; i++) convs += net->nodes[i].op == WC_OP_CONV;
    if (convs == 1 && last->op == WC_OP_CONV)
        memset(net->params + last->w_off, 0, sizeof(float) * (size_t)(last->b_off - last->w_off));
}

float *wc_net_input(wc_net *net) { return net->nodes[0].out; }
float *wc_net_output(wc_net *net) { return net->nodes[net->nnodes - 1].out; }
float *wc_net_output_grad(wc_net *net) { return net->nodes[net->nnodes - 1].grad; }

/* ---- forward and backward ---------------------------------------------------------------- */

/* A layer other than a convolution, over the first N samples, as tasks of (sample, share of
 * the channels): every task writes its own planes, so the split changes no result. */
typedef struct {
    const wc_net *net;
    const wc_node *nd;
    int parts;    /* tasks per sample */
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
            if (is_view_input(net, (int)(nd - net->nodes), k)) continue;
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
        case WC_OP_RELU: wc_relu_forward(nd->out + at, a->out + at_a, P * hw); break;
        case WC_OP_MAXPOOL: wc_maxpool2_forward(nd->out + at, a->out + at_a, P, a->H, a->W); break;
        case WC_OP_UPSAMPLE: wc_upsample2_forward(nd->out + at, a->out + at_a, P, a->H, a->W); break;
        default: WC_ASSERT(0);
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
    default: WC_ASSERT(0);
    }
}

static void run_layer(wc_net *net, const wc_node *nd, int N, int backward) {
    /* a few tasks per thread, whole samples when there are samples enough */
    const int parts = WC_MIN(nd->C, WC_MAX(1, (4 * net->threads + N - 1) / N));
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
            wc_conv2d_forward_ex(nd->out, a->out, net->params + nd->w_off,
                                 net->params + nd->b_off, &s, nd->fuse_relu ? WC_CONV_RELU : 0,
                                 net->pool, net->work);
            break;
        }
        case WC_OP_RELU:
            if (!nd->fwd_fused) run_layer(net, nd, N, 0);
            break;
        case WC_OP_MAXPOOL:
        case WC_OP_UPSAMPLE:
        case WC_OP_CONCAT: run_layer(net, nd, N, 0); break;
        case WC_OP_INPUT: WC_ASSERT(0); break;
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
            wc_conv2d_backward_ex(a->grad, net->grads + nd->w_off, net->grads + nd->b_off,
                                  nd->grad, a->out, net->params + nd->w_off, &s, flags,
                                  net->pool, net->work);
            break;
        }
        case WC_OP_RELU:
            if (!nd->bwd_fused) run_layer(net, nd, N, 1);
            break;
        case WC_OP_MAXPOOL:
        case WC_OP_UPSAMPLE:
        case WC_OP_CONCAT: run_layer(net, nd, N, 1); break;
        case WC_OP_INPUT: WC_ASSERT(0); break;
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
