/* netplan.c: where a network's activations and gradients live (net.h's memory rules): ReLUs
 * computed in place, concatenation inputs written straight into their concatenation (views),
 * ReLUs fused into the convolution before them, one arena planned before it is allocated
 * (reused by lifetime in inference), and which backward kernels may write their gradient
 * instead of adding to it. Everything here decides; net.c allocates and runs. */
#include "wildcpu/netplan.h"

#include <stdlib.h>
#include <string.h>

#include "wildcpu/conv.h"
#include "wildcpu/util.h"

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
        /* The network input is kept intact: the first convolution's backward reads it. Nor is
         * a concatenation's buffer changed in place: it holds its inputs (as views), which
         * their other readers, and the backward of the layers that read them, read as they
         * were. */
        nd->inplace = nd->op == WC_OP_RELU && a->op != WC_OP_INPUT && a->op != WC_OP_CONCAT &&
                      a->consumers == 1;
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
int wc_netplan_is_view_input(const wc_net *net, int c, int k) {
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
            if (net->nodes[i].in[j] >= 0)
                last[storage(net, net->nodes[i].in[j])] =
                    WC_MAX(last[storage(net, net->nodes[i].in[j])], i);
    }
    size_t *free_off = WC_ALLOC(sizeof(size_t) * (n + 1)),
           *free_len = WC_ALLOC(sizeof(size_t) * (n + 1));
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
    return !wc_netplan_is_view_input(net, i, 0) || !wc_netplan_is_view_input(net, i, 1);
}

/* Which backward contributions write their input's gradient (the first one to reach it) and
 * which add, by running the backward order over "written" marks per buffer owner: writing an
 * owner's gradient writes the views inside it too. A gradient read before anything wrote it (a
 * node nobody consumes), or written as a whole after a view inside it was (a view contributed
 * to before its concatenation's gradient), instead has its storage zeroed first and every
 * contribution to it adds; the plan is then run again. Sets write_in and the zeroed list. */
void wc_netplan_gradient_writes(wc_net *net) {
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
                if (a <= 0 || (nd->op == WC_OP_CONCAT && wc_netplan_is_view_input(net, i, j)))
                    continue;
                const int o = owner(net, a);
                if (zero[storage(net, a)] || written[o]) continue; /* adds */
                for (int v = 0; v < n && !again; v++)
                    if (v != o && written[v] && inside(net, v, o))
                        zero[storage(net, a)] = 1, again = 1;
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
void wc_netplan_buffers(wc_net *net, size_t *offset, size_t *upto) {
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

/* Points every node at its buffers in the allocated arena, as wc_netplan_buffers placed them: an
 * owner of its own at its offset (its gradient after it), a view inside its concatenation's
 * (placed first: it comes later in the graph, so this runs in reverse order), an in-place ReLU
 * at its input's. Sets the sample strides and the convolutions' shapes to match. */
void wc_netplan_carve(wc_net *net, const size_t *offset) {
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
