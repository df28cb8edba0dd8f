/* export.c: safetensors writer; see export.h. The format: an 8-byte little-endian header
 * length, a JSON header (padded with spaces to a multiple of 8), then the tensors' bytes. */
#include "wildcpu/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/le.h"
#include "wildcpu/model.h"
#include "wildcpu/raster.h"
#include "wildcpu/util.h"

int wc_export_run(const char *checkpoint, const char *out) {
    if (wc_dist_rank() != 0) return WC_EXIT_OK;
    wc_model m;
    if (wc_model_load(&m, checkpoint, 1, 0, 0) != WC_OK) return WC_EXIT_RUNTIME;
    const char *outs[1] = {out}, *what[1] = {"the exported model"}, *ins[2] = {m.path, NULL};
    if (wc_check_outputs_not_inputs(outs, what, 1, NULL, 0, ins) != WC_OK) {
        wc_model_free(&m);
        return WC_EXIT_USAGE;
    }
    const wc_net *net = m.net;
    /* the wildcpu metadata, as JSON, then escaped into a JSON string; every text from outside
     * (names, paths in the fingerprint) escaped, and room for each to double when escaped */
    size_t cap = 65536 + 2 * (strlen(net->spec) + strlen(m.fingerprint) + strlen(net->arch)) +
                 (size_t)m.nfeat * (2 * WC_BAND_NAME_MAX + 64);
    char *meta = WC_ALLOC(cap), *esc = WC_ALLOC(2 * cap), *header = WC_ALLOC(4 * cap);
    size_t n = (size_t)snprintf(meta, cap, "{\"architecture\":\"");
    n += wc_json_escape(meta + n, cap - n, net->arch);
    n += (size_t)snprintf(meta + n, cap - n,
                          "\",\"patch\":%d,\"checkpoint_step\":%ld,"
                          "\"output\":\"logits of burn probability (apply a sigmoid)\","
                          "\"nodata_policy\":\"a pixel with any nodata/NaN/Inf feature is set to "
                          "0 after normalization and its output is nodata; nodata label pixels "
                          "are excluded from the loss\",\"input_channels\":[",
                          m.patch, m.step);
    for (int c = 0; c < m.nfeat; c++) {
        n += (size_t)snprintf(meta + n, cap - n, "%s{\"name\":\"", c ? "," : "");
        n += wc_json_escape(meta + n, cap - n, m.feat_names[c]);
        n += (size_t)snprintf(meta + n, cap - n, "\",\"mean\":%.17g,\"std\":%.17g}", m.mean[c],
                              m.std[c]);
    }
    n += (size_t)snprintf(meta + n, cap - n, "],\"spec\":\"");
    n += wc_json_escape(meta + n, cap - n, net->spec);
    n += (size_t)snprintf(meta + n, cap - n, "\",\"training_data\":\"");
    n += wc_json_escape(meta + n, cap - n, m.fingerprint);
    snprintf(meta + n, cap - n, "\"}");
    wc_json_escape(esc, 2 * cap, meta);
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
    wc_atomic_file af;
    int status = WC_EXIT_RUNTIME;
    if (wc_atomic_open(&af, out, "wb") != WC_OK) goto done;
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h >> (8 * i));
    fwrite(len, 1, 8, af.f);
    fwrite(header, 1, h, af.f);
    /* tensors in table order, little-endian as safetensors wants on any host */
    unsigned char *le = WC_ALLOC(sizeof(float) * net->nparams);
    wc_le_put_f32s(le, net->params, net->nparams);
    fwrite(le, sizeof(float), net->nparams, af.f);
    free(le);
    if (wc_atomic_commit(&af) != WC_OK) goto done; /* a short write shows as the stream's error */
    wc_info("exported %s (step %ld, %d tensors, %zu parameters) to %s", m.path, m.step,
            net->ntensors, net->nparams, out);
    status = WC_EXIT_OK;
done:
    free(meta), free(esc), free(header);
    wc_model_free(&m);
    return status;
}
