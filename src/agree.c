/* agree.c: every rank's inputs against rank 0's; see agree.h. */
#include "wildcpu/agree.h"

#include <cpl_vsi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/cpuinfo.h"
#include "wildcpu/dist.h"
#include "wildcpu/util.h"

/* What a file is, for this comparison: its size (-1: missing or unreadable) and a hash of its
 * first and last EDGE bytes, read through GDAL's file systems (so also inside an archive). */
typedef struct {
    int64_t size;
    uint64_t edges;
} file_identity;

enum { EDGE = 4096 };

static file_identity identity_of(const char *path) {
    file_identity id = {-1, 0};
    VSIStatBufL st;
    VSILFILE *f = VSIStatL(path, &st) == 0 ? VSIFOpenL(path, "rb") : NULL;
    if (!f) return id;
    unsigned char buf[2 * EDGE];
    size_t got = VSIFReadL(buf, 1, EDGE, f);
    if ((int64_t)st.st_size > EDGE &&
        VSIFSeekL(f, (vsi_l_offset)(st.st_size - EDGE), SEEK_SET) == 0)
        got += VSIFReadL(buf + got, 1, EDGE, f);
    VSIFCloseL(f);
    id.size = (int64_t)st.st_size;
    id.edges = wc_fnv1a64(buf, got);
    return id;
}

/* The raster as GDAL describes it to this rank: what training and mapping plan by. */
static uint64_t raster_description(const wc_raster *r) {
    uint64_t h = wc_fnv1a64(&r->width, sizeof r->width);
    h ^= wc_fnv1a64(&r->height, sizeof r->height) * 31;
    h ^= wc_fnv1a64(r->gt, sizeof r->gt) * 37;
    h ^= wc_fnv1a64(r->wkt, strlen(r->wkt)) * 41;
    for (int i = 0; i < r->nbands; i++) {
        const wc_band *b = &r->bands[i];
        const double what[] = {b->type,   b->has_nodata, b->has_nodata ? b->nodata : 0,
                               b->masked, b->scale,      b->offset};
        h = h * 1099511628211ULL ^ wc_fnv1a64(b->name, strlen(b->name));
        h = h * 1099511628211ULL ^ wc_fnv1a64(what, sizeof what);
    }
    return h;
}

/* The files behind r (its own listing) and behind others (each path, then what GDAL lists of
 * it), in that order: the same on every rank whose inputs agree. */
static char **files_of(wc_raster *r, const char *const *others, int n, int *count) {
    char ***lists = WC_CALLOC((size_t)n + 1, sizeof *lists);
    int total = 0;
    for (char *const *f = wc_raster_files(r); *f; f++) total++;
    for (int p = 0; p < n; p++) {
        if (others[p]) lists[p] = wc_gdal_file_list(others[p]);
        for (int k = 0; lists[p] && lists[p][k]; k++) total++;
    }
    char **all = WC_CALLOC((size_t)total + 1, sizeof *all);
    total = 0;
    for (char *const *f = wc_raster_files(r); *f; f++) all[total++] = wc_strdup(*f);
    for (int p = 0; p < n; p++) {
        for (int k = 0; lists[p] && lists[p][k]; k++) all[total++] = wc_strdup(lists[p][k]);
        wc_strv_free(lists[p]);
    }
    free(lists);
    *count = total;
    return all;
}

int wc_agree_inputs(wc_raster *r, const char *const *others, int n) {
    const int rank = wc_dist_rank();
    if (wc_dist_size() == 1) return WC_OK;
    /* 1. the raster as GDAL describes it, and how many files there are */
    int nfiles = 0;
    char **files = files_of(r, others, n, &nfiles);
    uint64_t mine[2] = {raster_description(r), (uint64_t)nfiles}, first[2] = {mine[0], mine[1]};
    wc_dist_bcast(first, sizeof first, 0);
    int differs = 0;
    if (mine[1] != first[1]) {
        wc_error("rank %d sees %d files behind %s, rank 0 %" PRIu64 ": every rank must read "
                 "the same inputs (a node-local copy out of date, a file system not yet in "
                 "sync?)",
                 rank, nfiles, r->path, first[1]);
        differs = 1;
    } else if (mine[0] != first[0]) {
        char grid[512];
        wc_raster_describe_grid(r, grid, sizeof grid);
        wc_error("rank %d sees %s otherwise than rank 0 (here %s, %d bands): every rank must "
                 "read the same inputs (a node-local copy out of date, a file system not yet in "
                 "sync?)",
                 rank, r->path, grid, r->nbands);
        differs = 1;
    }
    /* 2. each file (a sample of a long list: the same on every rank, the counts agreeing) */
    if (!wc_dist_any(differs)) {
        /* rounded up, so that at most WC_AGREE_MAX_FILES are read (999 at a stride of 1 were) */
        const int stride = WC_MAX(1, (nfiles + WC_AGREE_MAX_FILES - 1) / WC_AGREE_MAX_FILES);
        const int m = (nfiles + stride - 1) / stride;
        file_identity *ids = WC_CALLOC((size_t)m + 1, sizeof *ids);
        file_identity *theirs = WC_CALLOC((size_t)m + 1, sizeof *theirs);
        for (int i = 0; i < m; i++) ids[i] = theirs[i] = identity_of(files[i * stride]);
        wc_dist_bcast(theirs, (size_t)m * sizeof *theirs, 0);
        for (int i = 0; i < m && !differs; i++) {
            if (ids[i].size == theirs[i].size && ids[i].edges == theirs[i].edges) continue;
            const char *f = files[i * stride];
            if (ids[i].size < 0 || theirs[i].size < 0)
                wc_error("rank %d %s %s, which rank 0 %s: every rank must read the same inputs "
                         "(a file system not yet in sync, a path only one node has?)",
                         rank, ids[i].size < 0 ? "cannot read" : "reads", f,
                         theirs[i].size < 0 ? "cannot read" : "reads");
            else
                wc_error("rank %d reads another %s than rank 0 (%" PRId64 " bytes here, %" PRId64
                         " there%s): every rank must read the same inputs (a node-local copy "
                         "out of date, a file system not yet in sync?)",
                         rank, f, ids[i].size, theirs[i].size,
                         ids[i].size == theirs[i].size ? ", other contents" : "");
            differs = 1;
        }
        free(ids);
        free(theirs);
    }
    wc_strv_free(files);
    return wc_dist_any(differs) ? WC_ERR : WC_OK;
}

int wc_agree_kernels(const char *what) {
    const int rank = wc_dist_rank(), size = wc_dist_size();
    if (size == 1) return 0;
    char mine[WC_KERNELS_MAX], root[WC_KERNELS_MAX];
    wc_cpuinfo_kernels(mine, sizeof mine);
    memcpy(root, mine, sizeof root);
    wc_dist_bcast(root, sizeof root, 0);
    const int differs = strcmp(mine, root) != 0;
    /* one warning, from the lowest rank that differs, not one from each of them */
    const int lowest = size - wc_dist_max_int(differs ? size - rank : 0);
    if (differs && rank == lowest) {
        char core[48] = "";
        sscanf(root, "openblas:%47[^/]", core);
        wc_warn("this rank computes with the kernels %s, rank 0 with %s: kernels of two CPU "
                "types may round differently (OpenBLAS's Haswell and SkylakeX kernels do), so "
                "%s may not be bitwise what one kind of kernels gives on any number of ranks; "
                "set OPENBLAS_CORETYPE=%s (and one WILDCPU_GEMM) for every rank",
                mine, root, what, core);
    }
    return lowest < size;
}
