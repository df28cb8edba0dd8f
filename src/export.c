/* export.c: safetensors writer; see export.h. The format: an 8-byte little-endian header
 * length, a JSON header (padded with spaces to a multiple of 8), then the tensors' bytes. */
#include "wildcpu/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dist.h"
#include "wildcpu/model.h"
#include "wildcpu/util.h"

/* Appends s to the buffer as the body of a JSON string (quotes and control characters
 * escaped). */
static size_t json_escape(char *dst, size_t cap, const char *s) {
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') dst[n++] = '\\', dst[n++] = (char)c;
        else if (c == '\n') dst[n++] = '\\', dst[n++] = 'n';
        else if (c < 0x20) n += (size_t)snprintf(dst + n, cap - n, "\\u%04x", c);
        else dst[n++] = (char)c;
    }
    dst[n] = '\0';
    return n;
}

int wc_export_run(const char *checkpoint, const char *out) {
    if (wc_dist_rank() != 0) return WC_EXIT_OK;
    wc_model m;
    if (wc_model_load(&m, checkpoint, 1, 0, 0) != WC_OK) return WC_EXIT_RUNTIME;
    const wc_net *net = m.net;
    /* the wildcpu metadata, as JSON, then escaped into a JSON string */
    size_t cap = 65536 + strlen(net->spec) * 2;
    char *meta = WC_ALLOC(cap), *esc = WC_ALLOC(2 * cap), *header = WC_ALLOC(4 * cap);
    size_t n = (size_t)snprintf(meta, cap,
                                "{\"architecture\":\"%s\",\"patch\":%d,\"checkpoint_step\":%ld,"
                                "\"output\":\"logits of burn probability (apply a sigmoid)\","
                                "\"nodata_policy\":\"a pixel with any nodata/NaN/Inf feature is "
                                "set to 0 after normalization and its output is nodata; nodata "
                                "label pixels are excluded from the loss\",\"input_channels\":[",
                                net->arch, m.patch, m.step);
    for (int c = 0; c < m.nfeat; c++)
        n += (size_t)snprintf(meta + n, cap - n, "%s{\"name\":\"%s\",\"mean\":%.17g,\"std\":%.17g}",
                              c ? "," : "", m.feat_names[c], m.mean[c], m.std[c]);
    n += (size_t)snprintf(meta + n, cap - n, "],\"spec\":\"");
    n += json_escape(meta + n, cap - n, net->spec);
    snprintf(meta + n, cap - n, "\",\"training_data\":\"%s\"}", m.fingerprint);
    json_escape(esc, 2 * cap, meta);
    size_t h = (size_t)snprintf(header, 4 * cap, "{\"__metadata__\":{\"wildcpu\":\"%s\"}", esc);
    size_t offset = 0;
    for (int t = 0; t < net->ntensors; t++) {
        const wc_tensor *tn = &net->tensors[t];
        h += (size_t)snprintf(header + h, 4 * cap - h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[",
                              tn->name);
        for (int d = 0; d < tn->ndim; d++)
            h += (size_t)snprintf(header + h, 4 * cap - h, "%s%d", d ? "," : "", tn->shape[d]);
        h += (size_t)snprintf(header + h, 4 * cap - h, "],\"data_offsets\":[%zu,%zu]}", offset,
                              offset + tn->count * sizeof(float));
        offset += tn->count * sizeof(float);
    }
    header[h++] = '}';
    while (h % 8) header[h++] = ' ';
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "wb");
    int status = WC_EXIT_RUNTIME;
    if (!f) {
        wc_error("cannot write %s: %s", tmp, strerror(errno));
        goto done;
    }
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h >> (8 * i));
    int ok = fwrite(len, 1, 8, f) == 8 && fwrite(header, 1, h, f) == h;
    /* tensors in table order; the host is little-endian (the checkpoint's byte-order check) */
    for (int t = 0; t < net->ntensors && ok; t++)
        ok = fwrite(net->params + net->tensors[t].offset, sizeof(float), net->tensors[t].count,
                    f) == net->tensors[t].count;
    if (fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, out) != 0) {
        wc_error("writing %s failed: %s", out, strerror(errno));
        remove(tmp);
        goto done;
    }
    wc_info("exported %s (step %ld, %d tensors, %zu parameters) to %s", m.path, m.step,
            net->ntensors, net->nparams, out);
    status = WC_EXIT_OK;
done:
    free(meta), free(esc), free(header);
    wc_model_free(&m);
    return status;
}
