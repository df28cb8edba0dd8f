/* fuzz_spec.c: fuzz target for the network-spec parser and wc_net_create (libFuzzer's entry
 * point; tests/fuzz/replay.c runs the same function on saved inputs in the normal build).
 *
 * The input is a spec text (a NUL-terminated copy: a spec is a C string, as a checkpoint's
 * section becomes one in model.c). It is built for a few small inputs, for inference and for
 * training, the way predict and train build it; a network that builds and is cheap enough is
 * run forward (and backward when training) on zero input, and its receptive field computed, so
 * a layout that gives a buffer too few floats is an ASan report.
 *
 * Byte mutations of a text mostly make typos; the size arithmetic is reached by networks that
 * parse, with extreme values. So an input whose first byte is 0xff (no spec starts with it) is
 * a compact list of layers, rendered here into spec text (see render_compact) that then goes
 * through the same parser: mutating it changes layers, wiring and values, not spelling.
 *
 * Not here: checkpoints (fuzz_ckpt.c), numerical correctness (tests/test_net.c). */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/net.h"
#include "wildcpu/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* (in_channels, max_N, H, W): square and not, even and odd, one sample and two. */
static const int SHAPES[][4] = {{3, 1, 16, 16}, {2, 2, 8, 12}, {1, 1, 5, 3}};

/* What running a network may cost: its forward FLOPs per sample (the library's own count,
 * convolutions only: OpenBLAS, not instrumented) and the values all its layers write for all
 * samples (every one goes through instrumented loops). About a millisecond under ASan, so the
 * fuzzer keeps its speed; larger networks are still built and checked, only not run. */
#define RUN_MAX_FLOPS 1e6
#define RUN_MAX_VALUES 3e4

/* The memory limit the target sets: a network it accepts is allocated for real, and ASan
 * clears reused memory, so large limits cost time per input (see LLVMFuzzerInitialize). */
#define MEMORY_LIMIT ((size_t)16 << 20)

/* What wc_net_create promises of a network it returns (net.h), checked here because a wrong
 * size that allocates without touching memory, or a wrapped int, is no crash: it fails these
 * even in a build without sanitizers. */
static void check_contract(const wc_net *net, const int shape[4]) {
    wc_memory_plan mp;
    wc_net_memory_plan(net, &mp);
    WC_ASSERT(mp.params + mp.grads + mp.activations + mp.workspace <= MEMORY_LIMIT);
    WC_ASSERT(net->nnodes >= 2 && net->nnodes <= WC_NET_MAX_LAYERS);
    for (int i = 0; i < net->nnodes; i++) {
        const wc_node *nd = &net->nodes[i];
        WC_ASSERT(nd->C >= 1 && nd->H >= 1 && nd->W >= 1);
        WC_ASSERT((double)net->max_N * nd->C * nd->H * nd->W <= INT_MAX);
    }
    const wc_node *last = &net->nodes[net->nnodes - 1];
    WC_ASSERT(last->C == 1 && last->H == shape[2] && last->W == shape[3]);
    int radius, alignment;
    wc_net_receptive_field(net, &radius, &alignment);
    WC_ASSERT(radius >= 0 && radius <= WC_NET_MAX_REACH);
    WC_ASSERT(alignment >= 1 && alignment <= WC_NET_MAX_REACH);
}

/* Builds (and maybe runs) the network; returns whether it was built. */
static int exercise(const char *spec, const int shape[4], int mode) {
    wc_net *net = wc_net_create("fuzz", spec, shape[0], shape[1], shape[2], shape[3], mode);
    if (!net) return 0;
    check_contract(net, shape);
    double values = 0;
    for (int i = 0; i < net->nnodes; i++)
        values += (double)net->max_N * net->nodes[i].C * net->nodes[i].H * net->nodes[i].W;
    if (net->flops_forward <= RUN_MAX_FLOPS && values <= RUN_MAX_VALUES) {
        wc_net_init_params(net, 1, 0.1);
        const int N = net->max_N;
        memset(wc_net_input(net), 0, sizeof(float) * N * shape[0] * shape[2] * shape[3]);
        wc_net_forward(net, N);
        if (mode == WC_NET_TRAIN) {
            memset(net->grads, 0, sizeof(float) * net->nparams);
            float *g = wc_net_output_grad(net);
            for (size_t i = 0; i < (size_t)N * shape[2] * shape[3]; i++) g[i] = 1.0f;
            wc_net_backward(net, N);
        }
    }
    wc_net_destroy(net);
    return 1;
}

/* Option values the compact form picks from: the edges of every check (0, 1, odd, even, the
 * parser's 2^20 limit and one beyond) and sizes that overflow products of a few of them. */
static const int VALUES[16] = {0,  1,    2,     3,      4,      5,       7,       8,
                               16, 31,   1023,  65536,  524288, 1048575, 1048576, 1048577};

/* The compact form, after the 0xff: per layer, byte 0 the type (its low 7 bits mod 5: conv
 * relu maxpool upsample concat; its bit 7, for conv: k= instead of kh= and kw=), byte 1 its
 * input counted back from the newest layer; then for concat a byte for the second input, for
 * conv three bytes: 4-bit VALUES indices of out and kh (or k), of kw and stride, then a byte
 * whose low 4 bits index pad, bit 4 writes stride=, bit 5 writes pad=. Layers are n1, n2, ...
 * after "input n0". Returns a malloc'ed spec text. */
static char *render_compact(const uint8_t *d, size_t n) {
    static const char *const OPS[5] = {"conv", "relu", "maxpool", "upsample", "concat"};
    size_t cap = 64 + 96 * n, len = 0;
    char *spec = malloc(cap);
    if (!spec) return NULL;
    len += (size_t)snprintf(spec, cap, "input n0\n");
    int layers = 1;
    for (size_t i = 0; i + 1 < n;) {
        int op = (d[i] & 0x7f) % 5, k_only = d[i] & 0x80, a = layers - 1 - d[i + 1] % layers;
        i += 2;
        len += (size_t)snprintf(spec + len, cap - len, "%s n%d n%d", OPS[op], layers, a);
        if (op == 4 && i < n) {
            len += (size_t)snprintf(spec + len, cap - len, " n%d", layers - 1 - d[i] % layers);
            i++;
        } else if (op == 0 && i + 2 < n) {
            int out = VALUES[d[i] >> 4], kh = VALUES[d[i] & 15], kw = VALUES[d[i + 1] >> 4];
            int stride = VALUES[d[i + 1] & 15], pad = VALUES[d[i + 2] & 15];
            if (k_only)
                len += (size_t)snprintf(spec + len, cap - len, " out=%d k=%d", out, kh);
            else
                len += (size_t)snprintf(spec + len, cap - len, " out=%d kh=%d kw=%d", out, kh, kw);
            if (d[i + 2] & 0x10)
                len += (size_t)snprintf(spec + len, cap - len, " stride=%d", stride);
            if (d[i + 2] & 0x20) len += (size_t)snprintf(spec + len, cap - len, " pad=%d", pad);
            i += 3;
        }
        len += (size_t)snprintf(spec + len, cap - len, "\n");
        layers++;
    }
    return spec;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    wc_log_set_quiet(2);
    /* the library's memory check at a fuzzer's scale (libFuzzer also counts an allocation
     * beyond -rss_limit_mb as a finding) */
    wc_net_set_memory_limit(MEMORY_LIMIT);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *spec = size && data[0] == 0xff ? render_compact(data + 1, size - 1) : malloc(size + 1);
    if (!spec) return 0;
    if (!size || data[0] != 0xff) {
        if (size) memcpy(spec, data, size);
        spec[size] = '\0';
    }
    /* Training needs everything inference does and more (all activations live, gradients),
     * so a network refused for inference is refused for training: skipping that halves the
     * cost of the many inputs that do not parse. */
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++)
        if (exercise(spec, SHAPES[s], WC_NET_INFER)) exercise(spec, SHAPES[s], WC_NET_TRAIN);
    free(spec);
    return 0;
}
