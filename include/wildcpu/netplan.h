/* netplan.h: where a network's buffers live, decided before anything large is allocated
 * (the memory rules of net.h). Used by net.c, in this order: wc_netplan_buffers on a network
 * whose shapes are known, then (after the arena is allocated) wc_netplan_carve, then for
 * training wc_netplan_gradient_writes. */
#ifndef WILDCPU_NETPLAN_H
#define WILDCPU_NETPLAN_H

#include <stddef.h>

#include "wildcpu/net.h"

/* Decides in-place ReLUs, concatenation views and fused ReLUs, and places every owner's
 * buffer in one arena: offset[i] is node i's place, upto[i] the arena's size once node i is
 * placed (what the memory check reports). Sets arena_floats and work_floats. */
void wc_netplan_buffers(wc_net *net, size_t *offset, size_t *upto);
/* Points every node at its buffers in net->arena as wc_netplan_buffers placed them. */
void wc_netplan_carve(wc_net *net, const size_t *offset);
/* Which backward kernels write their input's gradient instead of adding to it, and which
 * gradients must be zeroed before a backward pass (write_in, the zeroed list). */
void wc_netplan_gradient_writes(wc_net *net);
/* Whether input k of concatenation node c is a view into it (its gradient arrives in place). */
int wc_netplan_is_view_input(const wc_net *net, int c, int k);

#endif
