/* reader.h: reading patches ahead of the computation, on a thread of its own.
 *
 * The training loop submits read requests (lists of samples: patches, maybe shifted) in the order
 * it will consume them, up to `slots` ahead; a reader thread with its own GDAL handles fills the
 * slots in that order while the main thread computes; wc_reader_take waits for the oldest request
 * (the wait is what the I/O-wait figure measures). Patches stay in their compact source types until
 * the main thread decodes them, so the memory held is slots * micro-batch * patch bytes.
 *
 * A read error is reported by wc_reader_take as WC_ERR, after the reader logged the file and
 * window; every request after it fails too, unread and unsaid (the run ends there, and the
 * first error is its cause). The thread never calls MPI.
 *
 * Not here: what to read (schedule.h), decoding (dataset.h). */
#ifndef WILDCPU_READER_H
#define WILDCPU_READER_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/dataset.h"

typedef struct wc_reader wc_reader;

/* A filled slot: n raw patches, each wc_dataset_patch_bytes(ds, 0) long. */
typedef struct wc_read_batch {
    int n;
    long tag;           /* the caller's label for the request, echoed back */
    wc_sample *samples; /* (n) */
    unsigned char *raw; /* (n, patch bytes) */
    size_t patch_bytes;
} wc_read_batch;

/* A reader with `slots` requests of at most max_patches patches each. Returns NULL after
 * logging if the thread's files cannot be opened. */
wc_reader *wc_reader_create(const wc_dataset *ds, int slots, int max_patches);
/* Stops the thread (pending requests are dropped) and frees everything. */
void wc_reader_destroy(wc_reader *rd);
/* True when a slot is free for another request. */
int wc_reader_can_submit(const wc_reader *rd);
/* Queues a request for n samples; a slot must be free. */
void wc_reader_submit(wc_reader *rd, const wc_sample *samples, int n, long tag);
/* Waits for the oldest request not yet taken; WC_ERR if it could not be read. The batch stays
 * valid until released: wc_reader_release releases the oldest taken batch. */
int wc_reader_take(wc_reader *rd, const wc_read_batch **batch);
void wc_reader_release(wc_reader *rd);
/* Seconds wc_reader_take spent waiting, and bytes of patch storage held. */
double wc_reader_wait_seconds(const wc_reader *rd);
size_t wc_reader_bytes_held(const wc_reader *rd);
/* Patches read and bytes read so far (by the thread). */
void wc_reader_counts(const wc_reader *rd, long *patches, double *bytes);

#endif
