/* netspec.h: reading the spec language (its grammar and limits are in net.h). Used by net.c;
 * nothing else needs a spec's nodes before a network is built from them. */
#ifndef WILDCPU_NETSPEC_H
#define WILDCPU_NETSPEC_H

#include "wildcpu/net.h"

/* Parses spec (named arch in messages) into a freshly allocated array of nodes with their
 * names, operations, inputs and options; shapes and buffers are net.c's. Returns the number of
 * nodes, or -1 after an error message naming the line. The caller frees *out_nodes. */
int wc_netspec_parse(const char *arch, const char *spec, wc_node **out_nodes);

#endif
