/* bandmap.c: a raster's bands matched to a model's inputs by name and type; see bandmap.h.
 *
 * Every mismatch is collected into one message, so a user fixing a raster learns all that is
 * wrong with it at once rather than one band per run.
 *
 * Not here: reading the bands, deciding what to do with a raster that does not match. */
#include "wildcpu/bandmap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/labels.h"
#include "wildcpu/util.h"

/* From a record "name:value,name:value" (a fingerprint's bands and their types, a meta's units):
 * the value of `name`, or NULL. */
static const char *value_in_list(const char *list, const char *name, char *buf, size_t size) {
    size_t nlen = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ','), *colon;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* the value follows the LAST colon: band names may hold colons, values not */
        colon = NULL;
        for (const char *q = p; q < p + len; q++)
            if (*q == ':') colon = q;
        if (colon && (size_t)(colon - p) == nlen && strncmp(p, name, nlen) == 0) {
            snprintf(buf, size, "%.*s", (int)(p + len - colon - 1), colon + 1);
            return buf;
        }
        p += len + (end ? 1 : 0);
    }
    return NULL;
}

static void appendf(char *buf, size_t size, const char *fmt, ...) WC_PRINTF(3, 4);
static void appendf(char *buf, size_t size, const char *fmt, ...) {
    size_t n = strlen(buf);
    if (n + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, size - n, fmt, ap);
    va_end(ap);
}

/* Whether every value of a band of type `was` is a value of type `is` (Int16 in Float32, Byte
 * in UInt16): the same data stored wider, which the model reads as it read its training data.
 * A narrower type (Float32 training data read as Int16, as gdalwarp -of VRT makes every band of
 * the first band's type) has lost values the model knew. */
static int holds_every_value_of(const char *is, const char *was) {
#define T(t) (1u << WC_DT_##t)
    /* for each type (wc_dtype's order), the types whose every value it holds exactly */
    static const unsigned holds[] = {
        [WC_DT_BYTE] = T(BYTE),
        [WC_DT_UINT16] = T(BYTE) | T(UINT16),
        [WC_DT_INT16] = T(BYTE) | T(INT16),
        [WC_DT_UINT32] = T(BYTE) | T(UINT16) | T(UINT32),
        [WC_DT_INT32] = T(BYTE) | T(UINT16) | T(INT16) | T(INT32),
        [WC_DT_FLOAT32] = T(BYTE) | T(UINT16) | T(INT16) | T(FLOAT32), /* 24-bit mantissa */
        [WC_DT_FLOAT64] =
            T(BYTE) | T(UINT16) | T(INT16) | T(UINT32) | T(INT32) | T(FLOAT32) | T(FLOAT64),
    };
#undef T
    int a = -1, b = -1;
    for (int t = WC_DT_BYTE; t <= WC_DT_FLOAT64; t++) {
        if (strcmp(is, wc_dtype_name((wc_dtype)t)) == 0) a = t;
        if (strcmp(was, wc_dtype_name((wc_dtype)t)) == 0) b = t;
    }
    return a >= 0 && b >= 0 ? (holds[a] >> b) & 1 : strcmp(is, was) == 0;
}

/* bands[i] = the raster band feeding input channel i; every mismatch appended to why. */
static void match(const wc_model *m, const wc_raster *r, int label_band, int *bands, char *why,
                  size_t size) {
    char *list = WC_ALLOC(strlen(m->fingerprint) + 1), label[WC_BAND_NAME_MAX + 16] = "";
    wc_kv_get(m->fingerprint, "bands", list, strlen(m->fingerprint) + 1);
    wc_kv_get(m->fingerprint, "labels", label, sizeof label);
    const char *training_label = strncmp(label, "band:", 5) == 0 ? label + 5 : "";
    int *used = WC_CALLOC(r->nbands + 1, sizeof(int));
    why[0] = '\0';
    int narrower = 0;
    for (int i = 0; i < m->nfeat; i++) {
        const char *f = m->feat_names[i];
        int found = 0, named = 0;
        for (int b = 1; b <= r->nbands; b++)
            if (strcmp(r->bands[b - 1].name, f) == 0) named++, found = found ? found : b;
        int n;
        char tail;
        if (!found && sscanf(f, "band_%d%c", &n, &tail) == 1 && n >= 1 && n <= r->nbands) found = n;
        if (!found) {
            appendf(why, size, "%sband '%s' (input %d of the model) is missing", *why ? "; " : "",
                    f, i + 1);
            continue;
        }
        if (named > 1) {
            appendf(why, size, "%s%d bands are named '%s'%s: which is input %d is ambiguous",
                    *why ? "; " : "", named, f, wc_raster_renamed_note(r, f), i + 1);
            continue;
        }
        if (used[found]) {
            appendf(why, size, "%sband %d feeds two inputs ('%s' and '%s')", *why ? "; " : "",
                    found, m->feat_names[used[found] - 1], f);
            continue;
        }
        used[found] = i + 1;
        bands[i] = found;
        char tbuf[32];
        const char *want = value_in_list(list, f, tbuf, sizeof tbuf);
        const char *have = wc_dtype_name(r->bands[found - 1].type);
        if (want && !holds_every_value_of(have, want)) {
            appendf(why, size, "%sband %d '%s' is %s here but was %s in the training data",
                    *why ? "; " : "", found, f, have, want);
            narrower++;
        }
    }
    if (narrower)
        appendf(why, size,
                " (a band must be of its training type or a wider one that holds "
                "all its values, Int16 as Float32: other values are not those the "
                "model learned; gdal_translate or gdalwarp -ot TYPE writes them in "
                "another type)");
    if (label_band > 0 && label_band <= r->nbands && used[label_band])
        appendf(why, size, "%sband %d '%s' is the label band and an input of the model",
                *why ? "; " : "", label_band, r->bands[label_band - 1].name);
    int extra = 0;
    for (int b = 1; b <= r->nbands; b++) {
        const char *name = r->bands[b - 1].name;
        /* label bands are named as training leaves them out of the features: but for case
         * and blanks (wc_labels_name_like) */
        if (used[b] || b == label_band || r->bands[b - 1].is_alpha ||
            (*training_label && wc_labels_name_like(name, training_label)) ||
            wc_labels_name_like(name, WC_LABEL_BAND_NAME))
            continue;
        /* a band named as an input but not taken (several bands had that name) was said */
        int named_input = 0;
        for (int i = 0; i < m->nfeat && !named_input; i++)
            named_input = strcmp(name, m->feat_names[i]) == 0;
        if (named_input) continue;
        extra++;
        appendf(why, size, "%sband %d '%s' is not among the model's inputs", *why ? "; " : "", b,
                name);
    }
    if (extra)
        appendf(why, size,
                " (the model takes %d feature bands: drop the other band%s, e.g. with "
                "gdal_translate -b, or use a model trained with %s; evaluate takes its labels "
                "from the band --label-band names)",
                m->nfeat, extra > 1 ? "s" : "", extra > 1 ? "them" : "it");
    free(used);
    free(list);
}

int wc_bandmap_match(wc_bandmap *bm, const wc_model *m, const wc_raster *r, int label_band) {
    memset(bm, 0, sizeof *bm);
    int *bands = WC_CALLOC(m->nfeat, sizeof(int));
    char why[4096];
    match(m, r, label_band, bands, why, sizeof why);
    if (*why) {
        char hint[512];
        wc_raster_undescribed_hint(r, (const char *const *)m->feat_names, m->nfeat, hint,
                                   sizeof hint);
        wc_error("%s does not have the bands %s was trained on: %s%s", r->path, m->path, why, hint);
        free(bands);
        return WC_ERR;
    }
    /* A checkpoint of a version before 2026-12-02 read such bands otherwise (stored values, no
     * masks, an unrounded nodata): its statistics and its validation would meet other values
     * here, and the map would be silently wrong. */
    char marked[16] = "";
    wc_kv_get(m->meta, WC_META_BAND_VALUES, marked, sizeof marked);
    for (int c = 0; c < m->nfeat && !*marked; c++) {
        const wc_band *b = &r->bands[bands[c] - 1];
        if (!wc_band_read_differs(b)) continue;
        if (wc_band_packed(b))
            wc_error("%s, band %d (%s) is packed (scale %.9g, offset %.9g) and %s was written by "
                     "a wildcpu that read packed bands without unpacking them: retrain it with "
                     "this version (a model trained on bands packed exactly like these reads "
                     "them as it did once their scale and offset are removed, on a copy: "
                     "gdal_edit.py -scale 1 -offset 0)",
                     r->path, bands[c], b->name, b->scale, b->offset, m->path);
        else
            wc_error("%s, band %d (%s) has %s, and %s was written by a wildcpu that %s: retrain "
                     "it with this version",
                     r->path, bands[c], b->name,
                     b->masked ? "a mask" : "a nodata value only the float nearest it equals",
                     m->path, b->masked ? "read masked pixels as data" : "matched no pixel to it");
        free(bands);
        return WC_ERR;
    }
    bm->n = m->nfeat;
    bm->bands = bands;
    bm->type = wc_band_read_type(&r->bands[bands[0] - 1]);
    for (int c = 1; c < bm->n; c++)
        bm->type = wc_dtype_union(bm->type, wc_band_read_type(&r->bands[bands[c] - 1]));
    return WC_OK;
}

char *wc_bandmap_units_record(const wc_raster *r, const int *bands, int n) {
    size_t cap = 1;
    for (int c = 0; c < n; c++) cap += strlen(r->bands[bands[c] - 1].name) + WC_BAND_UNIT_MAX + 2;
    char *rec = WC_ALLOC(cap);
    rec[0] = '\0';
    for (int c = 0; c < n; c++) {
        const wc_band *b = &r->bands[bands[c] - 1];
        if (*b->unit) appendf(rec, cap, "%s%s:%s", *rec ? "," : "", b->name, b->unit);
    }
    return rec;
}

void wc_bandmap_warn_units(const wc_bandmap *bm, const wc_model *m, const wc_raster *r) {
    const size_t size = strlen(m->meta) + 1;
    char *units = WC_ALLOC(size), why[2048] = "";
    wc_kv_get(m->meta, WC_META_UNITS, units, size);
    for (int c = 0; c < bm->n && *units; c++) {
        char buf[WC_BAND_UNIT_MAX];
        const char *was = value_in_list(units, m->feat_names[c], buf, sizeof buf);
        const wc_band *b = &r->bands[bm->bands[c] - 1];
        /* a side without a unit says nothing: most rasters have none */
        if (was && *was && *b->unit && !wc_units_same(was, b->unit))
            appendf(why, sizeof why, "%sband %d (%s) is in %s here, in %s in the training data",
                    *why ? "; " : "", bm->bands[c], b->name, b->unit, was);
    }
    if (*why)
        wc_warn("%s: %s: values in other units are not what the model %s learned, and the map "
                "may mean little; if the units say true, convert the values (gdal_translate "
                "-scale, or a VRT's ScaleOffset) and set the unit (gdal_edit.py -units)",
                r->path, why, m->path);
    free(units);
}

void wc_bandmap_free(wc_bandmap *bm) {
    if (!bm) return;
    free(bm->bands);
    memset(bm, 0, sizeof *bm);
}
