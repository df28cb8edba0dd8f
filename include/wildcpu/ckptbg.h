/* ckptbg.h: checkpoints written by a background thread, so that a training step never waits
 * for the disk.
 *
 * At a step boundary the trainer hands a snapshot (snapshot.h) to wc_ckptbg_start, which copies
 * what changes from step to step (parameters, optimizer moments, the reducer's exponents, the
 * meta and metrics texts) into buffers allocated once by wc_ckptbg_create, and returns: the
 * encoding, compression, CRC, fsync, rename and pruning (wc_snapshot_write) run on the writer
 * thread from that copy, while training goes on. Only one write runs at a time: a new snapshot
 * waits for the previous write to end, and that wait is the only time the training thread
 * gives to a background checkpoint besides the copy. The write is as atomic as a synchronous
 * one (ckpt.h): a crash or a kill at any moment leaves the previous checkpoints intact.
 *
 * The rest of the snapshot (settings, data fingerprint, spec, feature names, normalization)
 * is borrowed: it must stay unchanged and alive until wc_ckptbg_destroy.
 *
 * The thread makes no MPI call and writes no log line of the run (metrics.jsonl): the trainer
 * learns how a write went through wc_ckptbg_poll and records it itself.
 *
 * Not here: when to checkpoint (train.c), the file format (snapshot.c, ckpt.c). */
#ifndef WILDCPU_CKPTBG_H
#define WILDCPU_CKPTBG_H

#include <stddef.h>

#include "wildcpu/snapshot.h"

typedef struct wc_ckptbg wc_ckptbg;

/* How a background write ended. */
typedef struct wc_ckptbg_result {
    int rc; /* WC_OK or WC_ERR (the writer logged why) */
    long step;
    size_t bytes;
    double seconds; /* the write's own time on the writer thread */
    double stall;   /* the training thread's time in wc_ckptbg_start (waiting + copying) */
    char why[64];
} wc_ckptbg_result;

/* The writer and its buffers for snapshots of nparams parameters, ntensors exponents and, when
 * has_v, a second moment. NULL after a message when the thread cannot be started. */
wc_ckptbg *wc_ckptbg_create(size_t nparams, int ntensors, int has_v, int nfeat);
/* Waits for a running write, then stops the thread. Accepts NULL. */
void wc_ckptbg_destroy(wc_ckptbg *w);
/* Waits for the previous write (if it still runs), copies s, and starts writing it as
 * DIR/ckpt-<step>.wcp keeping the newest `keep` (why: for the log). Returns the seconds the
 * caller spent here. A result not yet taken by wc_ckptbg_poll is kept for it. */
double wc_ckptbg_start(wc_ckptbg *w, const char *dir, const wc_snapshot *s, int keep,
                       const char *why);
/* The results of finished writes, oldest first, each once: returns 1 and fills res when one is
 * there; with wait, waits for the running write first. 0 when there is nothing to report. */
int wc_ckptbg_poll(wc_ckptbg *w, int wait, wc_ckptbg_result *res);

#endif
