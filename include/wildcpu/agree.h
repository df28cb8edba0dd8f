/* agree.h: whether every rank reads the same inputs as rank 0, and computes with the same
 * kernels.
 *
 * Every rank opens the inputs itself, by the same command line; a node that sees other files
 * (a stale node-local copy of a tile, a file system not yet in sync, an oracle one node does
 * not see) would otherwise train on or map other data than the rest, silently, or leave the
 * ranks in collectives of different sizes.
 *
 * Not here: opening or checking the inputs themselves (raster.c, dataset.c, predict.c). */
#ifndef WILDCPU_AGREE_H
#define WILDCPU_AGREE_H

#include "wildcpu/raster.h"

/* Compares on every rank against rank 0: the raster r as GDAL describes it (size,
 * georeferencing, bands' names, types and nodata) and each file behind r (wc_raster_files: the
 * listing r's other checks use) and behind others[0..n) (NULLs skipped; a VRT's sources,
 * nested ones too), up to WC_AGREE_MAX_FILES spread over them: its size and its first and last
 * 4 KiB, not its time stamps, which copies need not keep. A rank that differs says which file,
 * and how. Collective; WC_OK on every rank or WC_ERR on every rank. */
#define WC_AGREE_MAX_FILES 500
int wc_agree_inputs(wc_raster *r, const char *const *others, int n);

/* Whether every rank computes with rank 0's kernels (wc_cpuinfo_kernels): ranks on nodes of
 * two CPU types, or given different OPENBLAS_CORETYPE or WILDCPU_GEMM, still take the same
 * steps (the reduction is exact), but round their own samples' sums their own way, so the
 * result is no longer bitwise that of any other number of ranks. The lowest rank that differs
 * warns, naming both kernels and `what` ("this training", "this map"). Collective; returns 1
 * on every rank when some rank differs, else 0. */
int wc_agree_kernels(const char *what);

#endif
