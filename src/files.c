/* files.c: whole-file reads and atomic replacement; see files.h. */
#define _POSIX_C_SOURCE 200809L
#include "wildcpu/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wildcpu/util.h"

char *wc_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = WC_ALLOC(cap);
    for (;;) {
        n += fread(s + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        char *bigger = WC_ALLOC(cap * 2);
        memcpy(bigger, s, n);
        free(s);
        s = bigger;
        cap *= 2;
    }
    int failed = ferror(f), err = errno;
    fclose(f);
    if (failed) {
        free(s);
        errno = err ? err : EIO;
        return NULL;
    }
    s[n] = '\0';
    return s;
}

char *wc_temp_path(const char *path, const char *tag) {
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    size_t n = strlen(path) + strlen(tag) + 32;
    char *t = WC_ALLOC(n);
    snprintf(t, n, "%.*s.%s.%s-%ld", dirlen, path, slash ? slash + 1 : path, tag, (long)getpid());
    return t;
}

int wc_fsync_path(const char *path, int directory) {
    int fd = open(path, directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0) {
        wc_error("cannot open %s to sync it: %s", path, strerror(errno));
        return WC_ERR;
    }
    int rc = fsync(fd), err = errno;
    close(fd);
    if (rc != 0) {
        wc_error("fsync of %s failed: %s", path, strerror(err));
        return WC_ERR;
    }
    return WC_OK;
}

int wc_fsync_parent(const char *path) {
    char *dir = wc_strdup(path), *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    int rc = wc_fsync_path(slash ? (*dir ? dir : "/") : ".", 1);
    free(dir);
    return rc;
}

int wc_atomic_open(wc_atomic_file *a, const char *path, const char *mode) {
    a->path = wc_strdup(path);
    a->tmp = wc_temp_path(path, "tmp");
    a->f = fopen(a->tmp, mode);
    if (!a->f) {
        wc_error("cannot write %s (for %s): %s", a->tmp, path, strerror(errno));
        free(a->path), free(a->tmp);
        memset(a, 0, sizeof *a);
        return WC_ERR;
    }
    return WC_OK;
}

int wc_atomic_commit(wc_atomic_file *a) {
    const char *failed = NULL;
    int err = 0;
    if (ferror(a->f)) failed = "write", err = errno ? errno : EIO;
    else if (fflush(a->f) != 0) failed = "flush", err = errno;
    else if (fsync(fileno(a->f)) != 0) failed = "fsync", err = errno;
    if (fclose(a->f) != 0 && !failed) failed = "close", err = errno;
    a->f = NULL;
    if (!failed && rename(a->tmp, a->path) != 0) failed = "rename", err = errno;
    int rc = WC_OK;
    if (failed) {
        wc_error("writing %s failed at %s of %s: %s; the previous %s (if any) is untouched",
                 a->path, failed, a->tmp, strerror(err), a->path);
        unlink(a->tmp);
        rc = WC_ERR;
    } else {
        rc = wc_fsync_parent(a->path);
    }
    free(a->path), free(a->tmp);
    memset(a, 0, sizeof *a);
    return rc;
}

void wc_atomic_abort(wc_atomic_file *a) {
    if (a->f) fclose(a->f);
    if (a->tmp) unlink(a->tmp);
    free(a->path), free(a->tmp);
    memset(a, 0, sizeof *a);
}
