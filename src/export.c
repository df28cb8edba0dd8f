/* export.c: safetensors writer; see export.h. The format: an 8-byte little-endian header
 * length, a JSON header (padded with spaces to a multiple of 8), then the tensors' bytes.
 *
 * Not here: the weights' layout (the tensor table of net.h is already PyTorch's), reading
 * safetensors back. */
#include "wildcpu/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/json.h"
#include "wildcpu/le.h"
#include "wildcpu/model.h"
#include "wildcpu/raster.h"
#include "wildcpu/rundir.h"
#include "wildcpu/snapshot.h"
#include "wildcpu/util.h"

int wc_export_run(const char *checkpoint, const char *out) {
    if (wc_dist_rank() != 0) return WC_EXIT_OK;
    wc_model m;
    if (wc_model_load(&m, checkpoint, 1, 0, 0) != WC_OK) {
        wc_rundir_say_if_training(checkpoint);
        return WC_EXIT_RUNTIME;
    }
    const char *outs[1] = {out}, *what[1] = {"the exported model"}, *ins[2] = {m.path, NULL};
    int status = wc_check_output_path("exported model", out, ins);
    if (status == WC_EXIT_OK && wc_check_outputs_not_inputs(outs, what, 1, NULL, 0, ins) != WC_OK)
        status = WC_EXIT_USAGE;
    if (status == WC_EXIT_OK) status = wc_ckpt_refuse_as_output("exported model", out);
    if (status == WC_EXIT_OK)
        status = wc_refuse_other_kind("exported model", out, WC_KIND_SAFETENSORS);
    if (status != WC_EXIT_OK) {
        wc_model_free(&m);
        return status;
    }
    const wc_net *net = m.net;
    /* The wildcpu metadata is a JSON document of its own, stored as a JSON string: safetensors'
     * __metadata__ maps names to strings only. Names, the spec and the fingerprint come from
     * outside (band descriptions, file paths): the builder escapes them, twice over here. */
    wc_json meta, head;
    wc_json_init(&meta);
    wc_json_object(&meta);
    wc_json_kstr(&meta, "architecture", net->arch);
    wc_json_kint(&meta, "patch", m.patch);
    wc_json_kint(&meta, "checkpoint_step", m.step);
    wc_json_kstr(&meta, "output", "logits of burn probability (apply a sigmoid)");
    wc_json_kstr(&meta, "nodata_policy",
                 "a pixel with any nodata/NaN/Inf feature is set to 0 after normalization and its "
                 "output is nodata; nodata label pixels are excluded from the loss");
    /* what a value of an input channel is before the mean and std apply: a model of a wildcpu
     * that marked its checkpoints so (band_values=unpacked) took packed bands unpacked */
    char band_values[16] = "";
    wc_kv_get(m.meta, WC_META_BAND_VALUES, band_values, sizeof band_values);
    wc_json_kstr(&meta, "input_values",
                 *band_values ? "the band's value as GDAL unpacks it (stored value * scale + "
                                "offset, from the band's scale/offset metadata, netCDF's "
                                "scale_factor/add_offset), then (value - mean) / std; a pixel "
                                "masked by a GDAL mask or an alpha band is nodata; a channel "
                                "marked constant (it was over the training pixels) is 0"
                              : "the band's stored value (a checkpoint of a version before "
                                "2026-12-02: packed bands were not unpacked), then "
                                "(value - mean) / std");
    wc_json_key(&meta, "input_channels");
    wc_json_array(&meta);
    for (int c = 0; c < m.nfeat; c++) {
        wc_json_object(&meta);
        wc_json_kstr(&meta, "name", m.feat_names[c]);
        wc_json_knum(&meta, "mean", m.mean[c]);
        wc_json_knum(&meta, "std", m.std[c]);
        /* fed as 0 whatever its value (dataset.h, wc_feature_inv_std) */
        if (m.constant[c]) wc_json_kbool(&meta, "constant", 1);
        wc_json_end(&meta);
    }
    wc_json_end(&meta);
    wc_json_kstr(&meta, "spec", net->spec);
    wc_json_kstr(&meta, "training_data", m.fingerprint);
    wc_json_end(&meta);

    wc_json_init(&head);
    wc_json_object(&head);
    wc_json_key(&head, "__metadata__");
    wc_json_object(&head);
    wc_json_kstr(&head, "wildcpu", wc_json_text(&meta));
    wc_json_end(&head);
    size_t offset = 0;
    for (int t = 0; t < net->ntensors; t++) {
        const wc_tensor *tn = &net->tensors[t];
        const size_t bytes = tn->count * sizeof(float);
        wc_json_key(&head, tn->name);
        wc_json_object(&head);
        wc_json_kstr(&head, "dtype", "F32");
        wc_json_key(&head, "shape");
        wc_json_array(&head);
        for (int d = 0; d < tn->ndim; d++) wc_json_int(&head, tn->shape[d]);
        wc_json_end(&head);
        wc_json_key(&head, "data_offsets");
        wc_json_array(&head);
        wc_json_int(&head, (int64_t)offset);
        wc_json_int(&head, (int64_t)(offset + bytes));
        wc_json_end(&head);
        wc_json_end(&head);
        offset += bytes;
    }
    wc_json_end(&head);
    /* spaces after the JSON (safetensors allows them) bring the data to an 8-byte boundary */
    const size_t hlen = strlen(wc_json_text(&head));
    const size_t h = (hlen + 7) / 8 * 8;
    wc_atomic_file af;
    status = WC_EXIT_RUNTIME;
    if (wc_atomic_open(&af, out, "wb") != WC_OK) goto done;
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h >> (8 * i));
    fwrite(len, 1, 8, af.f);
    fputs(wc_json_text(&head), af.f);
    for (size_t i = hlen; i < h; i++) fputc(' ', af.f);
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
    wc_json_free(&meta);
    wc_json_free(&head);
    wc_model_free(&m);
    return status;
}
