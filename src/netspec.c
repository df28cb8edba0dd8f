/* netspec.c: the spec language (net.h): the built-in networks' specs, and parsing a spec text
 * into the node array wc_net_create lays out. A spec may come from an untrusted checkpoint:
 * every limit of net.h is checked as the text is read, before anything is sized by it. */
#include "wildcpu/netspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
/* One option of a conv layer, word "KEY=VALUE" (cut at its '=' here), into nd; seen holds the
 * options the line gave before it, k= counting as kh= and kw= (it sets both). type is the
 * layer's word, for the message that only conv takes options. Returns WC_OK, or WC_ERR after a
 * message. */
static int parse_option(wc_node *nd, char *word, unsigned *seen, const char *type, const char *arch,
                        int lineno) {
    char *eq = strchr(word, '=');
    *eq = '\0';
    const char *key = word, *val = eq + 1;
    if (nd->op != WC_OP_CONV) {
        wc_error("%s:%d: %s takes no option '%s'", arch, lineno, type, key);
        return WC_ERR;
    }
    static const char *const keys[] = {"out", "kh", "kw", "stride", "pad", "k"};
    int *const dst[] = {&nd->K, &nd->KH, &nd->KW, &nd->stride, &nd->pad};
    int k = -1, v;
    for (int i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++)
        if (strcmp(key, keys[i]) == 0) k = i;
    if (k < 0) {
        wc_error("%s:%d: unknown option '%s' (conv takes out, k, kh, kw, stride, pad)", arch,
                 lineno, key);
        return WC_ERR;
    }
    unsigned bits = k == 5 ? 1u << 1 | 1u << 2 : 1u << k;
    if (*seen & bits) {
        /* k= sets kh= and kw=: said only where that can be the clash */
        const int kernel = k == 1 || k == 2 || k == 5;
        wc_error("%s:%d: option %s given twice%s", arch, lineno, key,
                 kernel ? " (k= gives both kh= and kw=)" : "");
        return WC_ERR;
    }
    *seen |= bits;
    if (parse_int(val, &v) || (k == 5 && v < 1)) {
        wc_error("%s:%d: option %s needs an integer from %d to %d, got '%s'", arch, lineno, key,
                 k == 5, MAX_OPTION, val);
        return WC_ERR;
    }
    if (k == 5)
        nd->KH = nd->KW = v;
    else
        *dst[k] = v;
    return WC_OK;
}

static int parse_line(wc_node *nodes, int n, char *line, const char *arch, int lineno) {
    char *tok[WC_NET_MAX_TOKENS], *save = NULL;
    int ntok = 0;
    for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (ntok == WC_NET_MAX_TOKENS) {
            /* words beyond the limit were once dropped silently: an option lost without a word */
            wc_error("%s:%d: more than %d words on one line (a layer has at most 10)", arch, lineno,
                     WC_NET_MAX_TOKENS);
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
    } ops[] = {{"input", WC_OP_INPUT, 0},       {"conv", WC_OP_CONV, 1},
               {"relu", WC_OP_RELU, 1},         {"maxpool", WC_OP_MAXPOOL, 1},
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
                 arch, lineno, WC_NAME_MAX - 1, ntok < 2 ? "" : ", not '", ntok < 2 ? "" : tok[1],
                 ntok < 2 ? "" : "'");
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
    /* the words after the name: KEY=VALUE options, and the inputs, by name */
    unsigned seen = 0;
    int ninputs = 0;
    for (int t = 2; t < ntok; t++) {
        if (strchr(tok[t], '=')) {
            if (parse_option(nd, tok[t], &seen, tok[0], arch, lineno) != WC_OK) return WC_ERR;
            continue;
        }
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
int wc_netspec_parse(const char *arch, const char *spec, wc_node **out_nodes) {
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
