/* net.h: a network as a graph of layers, built once with every buffer it will ever use.
 *
 * A network is described by a small text spec, one layer per line (the built-in `unet-lite`
 * and `logistic` are specs too, and `--model FILE` reads one):
 *
 *     input    x
 *     conv     e1.0  x     out=32 k=3 pad=1       # optional stride=S; k=KH or kh=..,kw=..
 *     relu     e1.1  e1.0
 *     maxpool  p1    e1.1
 *     upsample u1    p1
 *     concat   c1    u1 e1.1                      # channels of the first input come first
 *     conv     h     c1    out=1 k=1              # the last layer is the output: 1 channel of
 * logits
 *
 * The output must not pass through a relu (nor a relu's pools and upsamples): its logits would
 * never fall below 0, its probabilities below 0.5.
 *
 * Layer names of convolutions are the tensor names of the exported weights ("e1.0.weight",
 * "e1.0.bias"), which follow PyTorch's nn.Sequential numbering in ../shared/bench/torch_ref.py.
 * A name is 1 to WC_NAME_MAX - 1 letters, digits, '_', '.' or '-' (it is written unquoted into
 * the exported file's JSON header). Outside comments a spec is printable ASCII, spaces and tabs
 * (CR-LF line ends are accepted); every option at most once (k= counts as kh= and kw=).
 *
 * A spec may come from an untrusted checkpoint (`wildcpu predict` builds the network a
 * checkpoint carries), so it is held to limits far beyond any network this project trains:
 * WC_NET_MAX_SPEC bytes, WC_NET_MAX_LINE characters a line, WC_NET_MAX_TOKENS words a layer
 * line, WC_NET_MAX_LAYERS layers, no tensor beyond INT_MAX values, a receptive field of at most
 * WC_NET_MAX_REACH pixels, and, checked before anything large is allocated, no more memory
 * than the machine has (see wc_net_create).
 *
 * Memory (after llm.c): parameters are ONE contiguous buffer, gradients another with the same
 * layout, so one memset zeroes every gradient, one collective reduces them and one write saves
 * them. Every activation, every activation gradient and the convolution workspace are allocated
 * by wc_net_create for a maximum micro-batch; nothing is allocated by forward or backward.
 * A ReLU whose input feeds nothing else overwrites it in place (and shares its gradient); a
 * convolution followed by such a ReLU applies it itself (forward, and the mask backward). The
 * inputs of a concatenation are views into its buffer (and their gradients into its gradient):
 * their producers write there and nothing is copied, forward or backward; such a tensor's
 * samples lie the concatenation's sample size apart (wc_node.sample). In the backward pass the
 * first contribution to an activation gradient overwrites it and later ones add, so no gradient
 * buffer is zeroed (only one that would be written in part first, which no built-in network
 * has). In inference (WC_NET_INFER) no gradient exists and a buffer lives only until its last
 * reader has run.
 *
 * Threads: a network runs its own work on wc_net_set_threads threads (a pool created with it),
 * splitting it by shapes alone, so results are bitwise the same for any thread count; OpenBLAS
 * is kept at one thread.
 *
 * Not here: the loss (the caller computes d loss/d logits into wc_net_output_grad), the
 * optimizer, data. */
#ifndef WILDCPU_NET_H
#define WILDCPU_NET_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/conv.h"
#include "wildcpu/layers.h"
#include "wildcpu/pool.h"

typedef enum wc_op {
    WC_OP_INPUT,
    WC_OP_CONV,
    WC_OP_RELU,
    WC_OP_MAXPOOL,
    WC_OP_UPSAMPLE,
    WC_OP_CONCAT,
} wc_op;

#define WC_NAME_MAX 32

/* The spec is copied into every checkpoint and parsed whole: 1 MiB is thousands of times a real
 * one (unet-lite's is 0.8 KiB). */
#define WC_NET_MAX_SPEC (1 << 20)
/* A layer line is a dozen short words; a longer line (comment included) is not a spec. */
#define WC_NET_MAX_LINE 1024
/* Type, name, two inputs and six options are 10 words: 16 leaves room, more is an error. */
#define WC_NET_MAX_TOKENS 16
/* Laying out the inference buffers takes time up to cubic in the number of layers (first-fit
 * over freed extents); unet-lite has 29 layers, and 256 keeps the worst case in milliseconds. */
#define WC_NET_MAX_LAYERS 256
/* Receptive-field radius and pooling alignment, in input pixels: prediction windows are wider
 * than twice the radius, so a network reaching further could never be run on any machine. */
#define WC_NET_MAX_REACH (1 << 20)

typedef struct wc_node {
    wc_op op;
    char name[WC_NAME_MAX];
    int in[2];     /* input node indices, -1 if unused */
    int consumers; /* how many nodes read this one */
    int C, H, W;   /* output shape per sample: (C, H, W) */
    /* convolution only */
    int K, KH, KW, stride, pad;
    size_t w_off, b_off; /* offsets of weight (K, C_in, KH, KW) and bias (K) in the parameters */
    wc_conv_shape shape; /* for the maximum micro-batch */
    /* buffers (views into the arena): output (N, C, H, W) and its gradient, same layout */
    float *out;
    float *grad;
    size_t sample; /* floats from one sample to the next in out and grad: C*H*W, or the
                    * concatenation's when they are a view into its buffers */
    int inplace;   /* a ReLU sharing its input's buffers */
    int view;      /* the concatenation whose buffers hold this node's (-1: none) */
    /* how the passes run it, decided once by wc_net_create */
    int fwd_fused;   /* a ReLU that the convolution before it applies */
    int bwd_fused;   /* an in-place ReLU whose mask the convolution reading it (alone) applies */
    int fuse_relu;   /* a convolution that applies the ReLU after it */
    int write_in[2]; /* backward: the contribution to input j's gradient is its first: write */
} wc_node;

/* One parameter tensor, as exported: name "e1.0.weight", 4-D or 1-D shape, offset. */
typedef struct wc_tensor {
    char name[WC_NAME_MAX + 8];
    int ndim;
    int shape[4];
    size_t offset, count;
    int is_weight; /* conv weight (decayed, per-tensor scaled) vs bias */
} wc_tensor;

typedef struct wc_memory_plan {
    size_t params, grads; /* bytes */
    size_t activations;   /* outputs and their gradients for one micro-batch, bytes */
    size_t workspace;     /* convolution lowering, bytes */
} wc_memory_plan;

enum { WC_NET_TRAIN = 1, WC_NET_INFER = 0 };

typedef struct wc_net {
    char arch[64]; /* "unet-lite", "logistic" or the spec file's name */
    char *spec;    /* the spec text it was built from (kept for checkpoints) */
    int in_channels;
    int max_N, H, W; /* built for micro-batches of up to max_N samples of H x W */
    int training;    /* gradient buffers exist */
    int nnodes;
    wc_node *nodes;
    int ntensors;
    wc_tensor *tensors;
    size_t nparams;
    float *params; /* (nparams) */
    float *grads;  /* (nparams), NULL when not training */
    float *arena;  /* every activation and activation gradient */
    size_t arena_floats;
    float *work; /* convolution workspace, for `threads` threads */
    size_t work_floats;
    int threads;
    wc_pool *pool;   /* NULL with one thread */
    int *zero_grads; /* nodes whose gradient buffers backward zeroes first (nzero) */
    int nzero;
    double flops_forward; /* multiply-adds x 2 per sample, convolutions only */
    /* Called by wc_net_backward after each node, from the output down (NULL: none). The
     * gradients from a convolution's w_off on are final once its node is done (parameters are
     * laid out in node order), so a caller can start reducing them while backward goes on. */
    void (*backward_hook)(void *ctx, const wc_node *node);
    void *backward_hook_ctx;
} wc_net;

/* The spec text of a built-in architecture ("unet-lite", "logistic"), or NULL. */
const char *wc_net_builtin_spec(const char *arch);

/* Parses a spec and allocates the network for micro-batches of up to max_N samples of
 * in_channels x H x W. `arch` names it (for messages and checkpoints). With mode WC_NET_INFER
 * no gradient buffers are allocated. Returns NULL after logging the problem (a syntax error
 * with its line number, an unknown layer, shapes that do not fit, H or W not divisible by what
 * the pooling needs, a limit of the spec language exceeded, or parameters, gradients,
 * activations and workspace together needing more than the memory limit: the message names
 * the layer at which the network outgrows it). Every size is computed with overflow checks and
 * the memory is checked before any buffer is allocated, so a hostile spec gets an error, not a
 * crash or an out-of-memory death. */
wc_net *wc_net_create(const char *arch, const char *spec, int in_channels, int max_N, int H, int W,
                      int mode);
void wc_net_destroy(wc_net *net);
/* What a spec builds for in_channels x H x W inputs, known without allocating the network:
 * its parameter and tensor counts, and its receptive field (see wc_net_receptive_field). */
typedef struct wc_net_facts {
    size_t nparams;
    int ntensors;
    int radius, alignment;
    /* windows whose origins agree modulo this give every pixel the same bits, not only the
     * same value in real arithmetic: the pooling alignment, times the output tiles of the
     * convolutions' arithmetic at their scales (conv.h, wc_conv_output_tile) */
    int exact_alignment;
} wc_net_facts;
/* WC_ERR after logging the problem, as wc_net_create would. */
int wc_net_describe(const char *arch, const char *spec, int in_channels, int H, int W,
                    wc_net_facts *facts);
/* A spec to train (--model): WC_ERR, after a message, when its output passes through a relu
 * (directly, or through the max-pools and upsamples that keep its sign): its logits are never
 * below 0, so no pixel's probability falls below 0.5. Not part of building a network
 * (wc_net_create, wc_net_describe): a checkpoint of such a spec, trained before training refused
 * them, still loads and maps as it did, rather than being called damaged. */
int wc_net_check_output(const char *arch, const char *spec);

/* The threads each network created afterwards runs its own work on (default 1), and OpenBLAS
 * set to one thread (its threads would compete with the network's). Process-wide, like the
 * memory limit: the trainer and the predictor set it from --threads before building a network.
 * The workspace grows with the thread count (one block of tiles per thread). */
void wc_net_set_threads(int threads);

/* The most memory, in bytes, wc_net_create lets one network's buffers take; 0 (the default)
 * means the machine's physical memory (sysconf(_SC_PHYS_PAGES) x page size). Process-wide:
 * tests and fuzzers lower it. The optimizer's moments are not the network's and not counted. */
void wc_net_set_memory_limit(size_t bytes);

/* Fills the parameters deterministically from (seed): He-uniform weights for convolutions
 * followed by a ReLU, PyTorch's default U(+-1/sqrt(fan_in)) for the others, zero biases, then
 * the output bias (of the last layer, or of the 1-channel convolution that the last layers
 * only upsample or max-pool) set to logit(prior) so the first predictions match the label
 * rate; a network whose only parametrized layer is the output (a convex model) starts from zero
 * weights, the constant predictor at the label rate. */
void wc_net_init_params(wc_net *net, uint64_t seed, double prior);

/* The input buffer (N, in_channels, H, W) the caller fills before wc_net_forward. */
float *wc_net_input(wc_net *net);
/* The logits (N, 1, H, W) after wc_net_forward, and their gradient buffer, which the caller
 * fills (d loss / d logits) before wc_net_backward. */
float *wc_net_output(wc_net *net);
float *wc_net_output_grad(wc_net *net);

/* Runs the graph on the first N (<= max_N) samples of the input. */
void wc_net_forward(wc_net *net, int N);
/* Adds d loss/d parameters into net->grads (zero them first for a fresh gradient), given the
 * output gradient. Activation gradients need no zeroing: each is written by its first
 * contribution. */
void wc_net_backward(wc_net *net, int N);

/* Parameter tensor by name ("e1.0.weight"), or NULL. */
const wc_tensor *wc_net_find_tensor(const wc_net *net, const char *name);
void wc_net_memory_plan(const wc_net *net, wc_memory_plan *plan);
/* The memory plan wc_net_create would allocate for these arguments (with the threads of
 * wc_net_set_threads), known without allocating it, so that a caller can check the room for it
 * first. WC_ERR after logging, as wc_net_create would. */
int wc_net_plan(const char *arch, const char *spec, int in_channels, int max_N, int H, int W,
                int mode, wc_memory_plan *plan);
/* How far an output pixel's value reaches into the input, in input pixels (conservative), and
 * the grid the pooling layers impose: windows whose origin is a multiple of `alignment` and
 * whose borders are `radius` away give an output that does not depend on the window. */
void wc_net_receptive_field(const wc_net *net, int *radius, int *alignment);

#endif
