/* ckptbg.c: the background checkpoint writer; see ckptbg.h. One thread, one job at a time,
 * one mutex and one condition variable; the finished writes' results wait in a small queue
 * until the trainer polls them. */
#include "wildcpu/ckptbg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/util.h"

#define MAX_RESULTS 8

struct wc_ckptbg {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int busy, quit;
    /* the job: the snapshot, with the buffers below in place of the trainer's */
    wc_snapshot snap;
    char dir[4200];
    int keep;
    wc_ckptbg_result job;
    /* buffers, allocated once */
    size_t nparams;
    int ntensors, nfeat;
    float *params, *optim_m, *optim_v; /* (nparams) */
    int32_t *exponent;                 /* (ntensors) */
    const char **feat_names;           /* (nfeat) borrowed strings */
    char *meta, *metrics;
    size_t meta_cap, metrics_cap;
    /* finished writes not yet polled */
    wc_ckptbg_result results[MAX_RESULTS];
    int nresults;
};

static void *writer_main(void *arg) {
    wc_ckptbg *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->busy) break; /* quit, nothing left to write */
        pthread_mutex_unlock(&w->mu);
        double secs = 0;
        size_t bytes = 0;
        int rc = wc_snapshot_write(w->dir, NULL, &w->snap, w->keep, &secs, &bytes);
        pthread_mutex_lock(&w->mu);
        w->job.rc = rc;
        w->job.seconds = secs;
        w->job.bytes = bytes;
        WC_ASSERT(w->nresults < MAX_RESULTS);
        w->results[w->nresults++] = w->job;
        w->busy = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

wc_ckptbg *wc_ckptbg_create(size_t nparams, int ntensors, int has_v, int nfeat) {
    wc_ckptbg *w = WC_CALLOC(1, sizeof *w);
    w->nparams = nparams;
    w->ntensors = ntensors;
    w->nfeat = nfeat;
    w->params = WC_ALLOC_FOR(sizeof(float) * (nparams + 1), "the checkpoint writer's parameters");
    w->optim_m = WC_ALLOC_FOR(sizeof(float) * (nparams + 1), "the checkpoint writer's moments");
    w->optim_v =
        has_v ? WC_ALLOC_FOR(sizeof(float) * (nparams + 1), "the checkpoint writer's moments")
              : NULL;
    w->exponent = WC_ALLOC(sizeof(int32_t) * ((size_t)ntensors + 1));
    w->feat_names = WC_ALLOC(sizeof(char *) * ((size_t)nfeat + 1));
    w->meta_cap = 4096, w->metrics_cap = 16384;
    w->meta = WC_ALLOC(w->meta_cap), w->metrics = WC_ALLOC(w->metrics_cap);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    const int err = pthread_create(&w->thread, NULL, writer_main, w);
    if (err != 0) {
        char why[1200];
        wc_error("cannot start the checkpoint writer thread: %s",
                 wc_thread_start_error(err, why, sizeof why));
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w->params), free(w->optim_m), free(w->optim_v), free(w->exponent);
        free((void *)w->feat_names), free(w->meta), free(w->metrics), free(w);
        return NULL;
    }
    return w;
}

void wc_ckptbg_destroy(wc_ckptbg *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL); /* a running write is finished first */
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->params), free(w->optim_m), free(w->optim_v), free(w->exponent);
    free((void *)w->feat_names), free(w->meta), free(w->metrics);
    free(w);
}

/* Copies text into *buf, growing it (rarely: the texts are a few hundred bytes). */
static const char *copy_text(char **buf, size_t *cap, const char *text) {
    const size_t n = strlen(text) + 1;
    if (n > *cap) {
        free(*buf);
        *cap = 2 * n;
        *buf = WC_ALLOC(*cap);
    }
    memcpy(*buf, text, n);
    return *buf;
}

double wc_ckptbg_start(wc_ckptbg *w, const char *dir, const wc_snapshot *s, int keep,
                       const char *why) {
    WC_ASSERT(s->nparams == w->nparams && s->ntensors == w->ntensors && s->nfeat == w->nfeat);
    WC_ASSERT((s->optim_v != NULL) == (w->optim_v != NULL));
    const double t0 = wc_now();
    pthread_mutex_lock(&w->mu);
    while (w->busy) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    /* the thread is idle: the buffers are the caller's until the job is handed over */
    w->snap = *s;
    memcpy(w->params, s->params, sizeof(float) * s->nparams);
    memcpy(w->optim_m, s->optim_m, sizeof(float) * s->nparams);
    if (w->optim_v) memcpy(w->optim_v, s->optim_v, sizeof(float) * s->nparams);
    if (s->ntensors > 0) memcpy(w->exponent, s->exponent, sizeof(int32_t) * (size_t)s->ntensors);
    for (int c = 0; c < s->nfeat; c++) w->feat_names[c] = s->feat_names[c];
    w->snap.params = w->params, w->snap.optim_m = w->optim_m, w->snap.optim_v = w->optim_v;
    w->snap.exponent = w->exponent, w->snap.feat_names = w->feat_names;
    w->snap.meta = copy_text(&w->meta, &w->meta_cap, s->meta);
    w->snap.metrics = copy_text(&w->metrics, &w->metrics_cap, s->metrics ? s->metrics : "");
    w->snap.owned = NULL;
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    w->keep = keep;
    memset(&w->job, 0, sizeof w->job);
    w->job.step = (long)s->step;
    snprintf(w->job.why, sizeof w->job.why, "%s", why);
    const double stall = wc_now() - t0;
    w->job.stall = stall;
    pthread_mutex_lock(&w->mu);
    w->busy = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return stall;
}

int wc_ckptbg_poll(wc_ckptbg *w, int wait, wc_ckptbg_result *res) {
    pthread_mutex_lock(&w->mu);
    while (wait && w->busy) pthread_cond_wait(&w->cv, &w->mu);
    int got = w->nresults > 0;
    if (got) {
        *res = w->results[0];
        memmove(w->results, w->results + 1, sizeof(w->results[0]) * (size_t)(w->nresults - 1));
        w->nresults--;
    }
    pthread_mutex_unlock(&w->mu);
    return got;
}
