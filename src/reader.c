/* reader.c: the read-ahead thread; see reader.h. A ring of slots, each FREE -> QUEUED ->
 * READY (or FAILED) -> TAKEN -> FREE; one mutex and one condition variable guard it. */
#include "wildcpu/reader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/util.h"

enum { SLOT_FREE, SLOT_QUEUED, SLOT_READY, SLOT_FAILED, SLOT_TAKEN };

typedef struct {
    int state;
    wc_read_batch b;
} slot;

struct wc_reader {
    const wc_dataset *ds;
    wc_data_files files; /* the thread's own GDAL handles */
    int nslots, max_patches;
    slot *slots;
    int head;      /* oldest request not yet released */
    int next_take; /* oldest request not yet taken */
    int tail;      /* next slot to queue into */
    int queued;    /* requests in the ring, taken or not */
    int untaken;   /* requests queued but not yet taken */
    int stop;
    int failed; /* a read failed: nothing more is read (the reader thread's own) */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double wait_seconds;
    long patches_read;
    double bytes_read;
};

static void *reader_main(void *arg) {
    wc_reader *rd = arg;
    pthread_mutex_lock(&rd->mu);
    int next = 0; /* the slot the thread works on next, in queue order */
    for (;;) {
        while (!rd->stop && rd->slots[next].state != SLOT_QUEUED)
            pthread_cond_wait(&rd->cv, &rd->mu);
        if (rd->stop) break;
        slot *s = &rd->slots[next];
        pthread_mutex_unlock(&rd->mu);
        /* after a failed read nothing more is read: the run ends at that batch, and the error of
         * a window read ahead would replace the one that ended it as the run's last (the
         * report's cause) */
        int status = rd->failed ? WC_ERR : WC_OK;
        double bytes = 0;
        for (int i = 0; i < s->b.n && status == WC_OK; i++) {
            status = wc_dataset_read_patch(rd->ds, &rd->files, s->b.samples[i],
                                           s->b.raw + (size_t)i * s->b.patch_bytes, 0);
            bytes += (double)wc_dataset_sample_bytes(rd->ds, s->b.samples[i]);
        }
        rd->failed |= status != WC_OK;
        pthread_mutex_lock(&rd->mu);
        s->state = status == WC_OK ? SLOT_READY : SLOT_FAILED;
        rd->patches_read += s->b.n;
        rd->bytes_read += bytes;
        pthread_cond_broadcast(&rd->cv);
        next = (next + 1) % rd->nslots;
    }
    pthread_mutex_unlock(&rd->mu);
    return NULL;
}

wc_reader *wc_reader_create(const wc_dataset *ds, int slots, int max_patches) {
    wc_reader *rd = WC_CALLOC(1, sizeof *rd);
    rd->ds = ds;
    rd->nslots = slots;
    rd->max_patches = max_patches;
    if (wc_data_files_open(&rd->files, ds, 0) != WC_OK) {
        free(rd);
        return NULL;
    }
    rd->slots = WC_CALLOC(slots, sizeof(slot));
    size_t pb = wc_dataset_patch_bytes(ds, 0);
    for (int i = 0; i < slots; i++) {
        rd->slots[i].b.samples = WC_ALLOC(sizeof(wc_sample) * max_patches);
        rd->slots[i].b.raw = WC_ALLOC_FOR(pb * max_patches, "a read-ahead slot's patches");
        rd->slots[i].b.patch_bytes = pb;
    }
    pthread_mutex_init(&rd->mu, NULL);
    pthread_cond_init(&rd->cv, NULL);
    const int err = pthread_create(&rd->thread, NULL, reader_main, rd);
    char why[1200];
    if (err != 0)
        wc_fatal("cannot start the reader thread: %s", wc_thread_start_error(err, why, sizeof why));
    return rd;
}

void wc_reader_destroy(wc_reader *rd) {
    if (!rd) return;
    pthread_mutex_lock(&rd->mu);
    rd->stop = 1;
    pthread_cond_broadcast(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
    pthread_join(rd->thread, NULL);
    pthread_mutex_destroy(&rd->mu);
    pthread_cond_destroy(&rd->cv);
    for (int i = 0; i < rd->nslots; i++) {
        free(rd->slots[i].b.samples);
        free(rd->slots[i].b.raw);
    }
    free(rd->slots);
    wc_data_files_close(&rd->files);
    free(rd);
}

int wc_reader_can_submit(const wc_reader *rd) {
    return rd->queued < rd->nslots;
}

void wc_reader_submit(wc_reader *rd, const wc_sample *samples, int n, long tag) {
    WC_ASSERT(n >= 0 && n <= rd->max_patches);
    pthread_mutex_lock(&rd->mu);
    WC_ASSERT(rd->queued < rd->nslots);
    slot *s = &rd->slots[rd->tail];
    WC_ASSERT(s->state == SLOT_FREE);
    memcpy(s->b.samples, samples, sizeof(wc_sample) * n);
    s->b.n = n;
    s->b.tag = tag;
    s->state = SLOT_QUEUED;
    rd->tail = (rd->tail + 1) % rd->nslots;
    rd->queued++;
    rd->untaken++;
    pthread_cond_broadcast(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

int wc_reader_take(wc_reader *rd, const wc_read_batch **batch) {
    double t0 = wc_now();
    pthread_mutex_lock(&rd->mu);
    WC_ASSERT(rd->untaken > 0);
    slot *s = &rd->slots[rd->next_take];
    while (s->state == SLOT_QUEUED) pthread_cond_wait(&rd->cv, &rd->mu);
    int state = s->state;
    s->state = SLOT_TAKEN;
    rd->next_take = (rd->next_take + 1) % rd->nslots;
    rd->untaken--;
    pthread_mutex_unlock(&rd->mu);
    rd->wait_seconds += wc_now() - t0;
    *batch = &s->b;
    return state == SLOT_READY ? WC_OK : WC_ERR;
}

void wc_reader_release(wc_reader *rd) {
    pthread_mutex_lock(&rd->mu);
    slot *s = &rd->slots[rd->head];
    WC_ASSERT(s->state == SLOT_TAKEN);
    s->state = SLOT_FREE;
    rd->head = (rd->head + 1) % rd->nslots;
    rd->queued--;
    pthread_mutex_unlock(&rd->mu);
}

double wc_reader_wait_seconds(const wc_reader *rd) {
    return rd->wait_seconds;
}

size_t wc_reader_bytes_held(const wc_reader *rd) {
    return (size_t)rd->nslots * rd->max_patches * rd->slots[0].b.patch_bytes;
}

void wc_reader_counts(const wc_reader *rd, long *patches, double *bytes) {
    pthread_mutex_t *mu = (pthread_mutex_t *)&rd->mu;
    pthread_mutex_lock(mu);
    *patches = rd->patches_read;
    *bytes = rd->bytes_read;
    pthread_mutex_unlock(mu);
}
