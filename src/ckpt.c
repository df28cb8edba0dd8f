/* ckpt.c: checkpoint files; see ckpt.h for the format and the crash-safety argument. */
#include "wildcpu/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "wildcpu/files.h"
#include "wildcpu/util.h"

static const unsigned char MAGIC[8] = {'W', 'C', 'K', 'P', 'T', '\r', '\n', 0x1a};
#define BOM 0x01020304u

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* CRC of the header without its CRC field, then of the payload. */
static uint32_t file_crc(const unsigned char *header, const unsigned char *payload, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, header, 40);
    c = crc32(c, header + 44, WC_CKPT_HEADER - 44);
    /* zlib's crc32 takes uInt lengths: feed large payloads in pieces */
    for (size_t off = 0; off < n;) {
        uInt len = (uInt)WC_MIN(n - off, (size_t)1 << 30);
        c = crc32(c, payload + off, len);
        off += len;
    }
    return (uint32_t)c;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* The test hook that simulates a crash in the middle of a write: with
 * WILDCPU_TEST_CRASH_CKPT=F or F@STEP (0 < F < 1) the process kills itself after writing that
 * fraction of the temporary file (of the checkpoint for STEP only, when given). Tests prove
 * with it that a torn write never replaces a good checkpoint. */
static size_t crash_after_bytes(size_t total, long step) {
    const char *s = getenv("WILDCPU_TEST_CRASH_CKPT");
    if (!s) return (size_t)-1;
    double f = atof(s);
    const char *at = strchr(s, '@');
    if (at && atol(at + 1) != step) return (size_t)-1;
    return f > 0 && f < 1 ? (size_t)(f * (double)total) : (size_t)-1;
}

void wc_ckpt_remove_stale(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, ".ckpt-", 6) != 0 || !strstr(e->d_name, ".wcp.tmp")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0) wc_warn("removed %s, left by an interrupted checkpoint write", path);
    }
    closedir(d);
}

static int write_all(FILE *f, const void *buf, size_t n, const char *path, size_t *written,
                     size_t crash_at) {
    const unsigned char *p = buf;
    while (n > 0) {
        size_t chunk = WC_MIN(n, (size_t)1 << 20);
        if (*written < crash_at && *written + chunk > crash_at) {
            chunk = crash_at - *written;
            fwrite(p, 1, chunk, f);
            fflush(f);
            fsync(fileno(f));
            raise(SIGKILL);
        }
        if (fwrite(p, 1, chunk, f) != chunk) {
            wc_error("writing %s failed: %s", path, strerror(errno));
            return WC_ERR;
        }
        p += chunk, n -= chunk, *written += chunk;
    }
    return WC_OK;
}

static void prune(const char *dir, int keep, long newest_step) {
    char **paths;
    long *steps;
    int n = wc_ckpt_list(dir, &paths, &steps);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (steps[i] <= newest_step && kept < keep) {
            kept++;
        } else if (steps[i] <= newest_step) {
            if (unlink(paths[i]) != 0)
                wc_warn("cannot delete old checkpoint %s: %s", paths[i], strerror(errno));
        }
        free(paths[i]);
    }
    if (n > 0) {
        free(paths);
        free(steps);
    }
}

int wc_ckpt_write(const char *dir, long step, const wc_ckpt_section *sections, int n, int keep,
                  double *seconds, size_t *bytes) {
    double t0 = wc_now();
    /* serialize the sections */
    size_t raw_size = 0;
    for (int i = 0; i < n; i++) raw_size += 4 + strlen(sections[i].name) + 8 + sections[i].size;
    unsigned char *raw = WC_ALLOC(raw_size), *p = raw;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(sections[i].name);
        put_u32(p, (uint32_t)len), p += 4;
        memcpy(p, sections[i].name, len), p += len;
        put_u64(p, sections[i].size), p += 8;
        if (sections[i].size) memcpy(p, sections[i].data, sections[i].size);
        p += sections[i].size;
    }
    uLongf zsize = compressBound(raw_size);
    unsigned char *z = WC_ALLOC(zsize);
    /* level 1: checkpoints are written often and read rarely; parameters compress little */
    if (compress2(z, &zsize, raw, raw_size, 1) != Z_OK) {
        wc_error("compressing the checkpoint failed");
        free(raw), free(z);
        return WC_ERR;
    }
    free(raw);
    unsigned char header[WC_CKPT_HEADER] = {0};
    memcpy(header, MAGIC, 8);
    put_u32(header + 8, WC_CKPT_VERSION);
    put_u32(header + 12, BOM);
    put_u64(header + 16, (uint64_t)step);
    put_u64(header + 24, raw_size);
    put_u64(header + 32, zsize);
    put_u32(header + 40, file_crc(header, z, zsize));

    char final[4096], tmp[4200];
    snprintf(final, sizeof final, "%s/ckpt-%08ld.wcp", dir, step);
    snprintf(tmp, sizeof tmp, "%s/.ckpt-%08ld.wcp.tmp%d", dir, step, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        wc_error("cannot create checkpoint %s: %s", tmp, strerror(errno));
        free(z);
        return WC_ERR;
    }
    size_t written = 0, crash_at = crash_after_bytes(WC_CKPT_HEADER + zsize, step);
    int rc = write_all(f, header, WC_CKPT_HEADER, tmp, &written, crash_at);
    if (rc == WC_OK) rc = write_all(f, z, zsize, tmp, &written, crash_at);
    free(z);
    if (rc == WC_OK && fflush(f) != 0) {
        wc_error("writing checkpoint %s failed at flush: %s", tmp, strerror(errno));
        rc = WC_ERR;
    }
    if (rc == WC_OK && fsync(fileno(f)) != 0) {
        wc_error("fsync of checkpoint %s failed: %s", tmp, strerror(errno));
        rc = WC_ERR;
    }
    if (fclose(f) != 0 && rc == WC_OK) {
        wc_error("closing checkpoint %s failed: %s", tmp, strerror(errno));
        rc = WC_ERR;
    }
    if (rc == WC_OK && rename(tmp, final) != 0) {
        wc_error("cannot rename %s to %s: %s", tmp, final, strerror(errno));
        rc = WC_ERR;
    }
    if (rc != WC_OK) {
        unlink(tmp); /* nothing half-written may stay behind */
        return WC_ERR;
    }
    /* The new checkpoint exists; until its directory entry is durable it may not survive a
     * crash, so it is not counted as written (and the older ones are kept). */
    if (wc_fsync_path(dir, 1) != WC_OK) return WC_ERR;
    if (keep > 0) prune(dir, keep, step);
    if (seconds) *seconds = wc_now() - t0;
    if (bytes) *bytes = WC_CKPT_HEADER + zsize;
    return WC_OK;
}

/* ---- reading ----------------------------------------------------------------------------- */

static int fail(char *why, size_t size, const char *fmt, const char *a) {
    snprintf(why, size, fmt, a);
    return WC_ERR;
}

int wc_ckpt_read(const char *path, wc_ckpt *ck, char *why, size_t why_size) {
    memset(ck, 0, sizeof *ck);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(why, why_size, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return fail(why, why_size, "cannot stat: %s", strerror(errno));
    }
    size_t size = (size_t)st.st_size;
    if (size == 0) {
        fclose(f);
        return fail(why, why_size, "%sempty file (0 bytes)", "");
    }
    if (size < WC_CKPT_HEADER) {
        fclose(f);
        return fail(why, why_size, "%struncated: shorter than the 64-byte header", "");
    }
    unsigned char *buf = WC_ALLOC(size);
    size_t got = fread(buf, 1, size, f);
    fclose(f);
    int rc = WC_ERR;
    unsigned char *raw = NULL;
    if (got != size) {
        fail(why, why_size, "read error: %s", strerror(errno));
        goto out;
    }
    if (memcmp(buf, MAGIC, 8) != 0) {
        fail(why, why_size, "%snot a wildcpu checkpoint (bad magic)", "");
        goto out;
    }
    uint32_t version = get_u32(buf + 8);
    if (get_u32(buf + 12) != BOM) {
        fail(why, why_size, "%swritten with another byte order or corrupted header", "");
        goto out;
    }
    if (version != WC_CKPT_VERSION) {
        char v[32];
        snprintf(v, sizeof v, "%u", version);
        snprintf(why, why_size, "format version %s, this wildcpu reads version %d%s", v,
                 WC_CKPT_VERSION, version > WC_CKPT_VERSION ? " (written by a newer wildcpu)" : "");
        goto out;
    }
    uint64_t raw_size = get_u64(buf + 24), zsize = get_u64(buf + 32);
    if (zsize != size - WC_CKPT_HEADER) {
        char s[96];
        snprintf(s, sizeof s, "%zu of %llu payload bytes present", size - WC_CKPT_HEADER,
                 (unsigned long long)zsize);
        fail(why, why_size, "truncated or extended: %s", s);
        goto out;
    }
    if (file_crc(buf, buf + WC_CKPT_HEADER, zsize) != get_u32(buf + 40)) {
        fail(why, why_size, "%sCRC-32 mismatch: the file is corrupted", "");
        goto out;
    }
    if (raw_size > ((uint64_t)1 << 40)) {
        fail(why, why_size, "%simplausible payload size", "");
        goto out;
    }
    raw = WC_ALLOC(raw_size);
    uLongf out_size = raw_size;
    if (uncompress(raw, &out_size, buf + WC_CKPT_HEADER, zsize) != Z_OK || out_size != raw_size) {
        fail(why, why_size, "%sthe compressed payload does not decompress", "");
        goto out;
    }
    /* sections */
    int cap = 16;
    ck->sections = WC_CALLOC(cap, sizeof(wc_ckpt_section));
    for (size_t off = 0; off < raw_size;) {
        if (raw_size - off < 4) goto bad_layout;
        uint32_t nlen = get_u32(raw + off);
        off += 4;
        if (nlen >= sizeof ck->sections[0].name || raw_size - off < nlen + 8) goto bad_layout;
        if (ck->nsections == cap)
            ck->sections = realloc(ck->sections, sizeof(wc_ckpt_section) * (cap *= 2));
        WC_ASSERT(ck->sections);
        wc_ckpt_section *s = &ck->sections[ck->nsections++];
        memcpy(s->name, raw + off, nlen);
        s->name[nlen] = '\0';
        off += nlen;
        uint64_t dlen = get_u64(raw + off);
        off += 8;
        if (dlen > raw_size - off) goto bad_layout;
        s->data = raw + off;
        s->size = dlen;
        off += dlen;
    }
    ck->step = (long)get_u64(buf + 16);
    ck->version = version;
    ck->file_bytes = size;
    ck->payload_bytes = raw_size;
    ck->blob = raw;
    raw = NULL;
    rc = WC_OK;
    goto out;
bad_layout:
    fail(why, why_size, "%sthe section layout is inconsistent", "");
    free(ck->sections);
    ck->sections = NULL;
    ck->nsections = 0;
out:
    free(buf);
    free(raw);
    return rc;
}

void wc_ckpt_free(wc_ckpt *ck) {
    if (!ck) return;
    free(ck->sections);
    free(ck->blob);
    memset(ck, 0, sizeof *ck);
}

const wc_ckpt_section *wc_ckpt_find(const wc_ckpt *ck, const char *name) {
    for (int i = 0; i < ck->nsections; i++)
        if (strcmp(ck->sections[i].name, name) == 0) return &ck->sections[i];
    return NULL;
}

/* ---- directories ------------------------------------------------------------------------- */

int wc_ckpt_list(const char *dir, char ***paths, long **steps) {
    *paths = NULL;
    *steps = NULL;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        /* ckpt-<digits>.wcp exactly: temporary files (.ckpt-*.tmpN) never match */
        const char *name = e->d_name;
        size_t len_name = strlen(name);
        if (len_name < 10 || strncmp(name, "ckpt-", 5) != 0 ||
            strcmp(name + len_name - 4, ".wcp") != 0)
            continue;
        int digits = 1;
        for (const char *c = name + 5; c < name + len_name - 4; c++) digits &= *c >= '0' && *c <= '9';
        if (!digits) continue;
        long step = strtol(name + 5, NULL, 10);
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            *paths = realloc(*paths, sizeof(char *) * cap);
            *steps = realloc(*steps, sizeof(long) * cap);
            WC_ASSERT(*paths && *steps);
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        (*paths)[n] = WC_ALLOC(len);
        snprintf((*paths)[n], len, "%s/%s", dir, e->d_name);
        (*steps)[n] = step;
        n++;
    }
    closedir(d);
    /* newest first (insertion sort: a handful of files) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (*steps)[j] > (*steps)[j - 1]; j--) {
            long ts = (*steps)[j];
            (*steps)[j] = (*steps)[j - 1], (*steps)[j - 1] = ts;
            char *tp = (*paths)[j];
            (*paths)[j] = (*paths)[j - 1], (*paths)[j - 1] = tp;
        }
    return n;
}

int wc_ckpt_latest(const char *dir, wc_ckpt *ck, char **path, int *found_any) {
    char **paths;
    long *steps;
    int n = wc_ckpt_list(dir, &paths, &steps);
    if (n < 0) {
        /* unreadable is not empty: the caller must not start over on top of it */
        wc_error("cannot list the checkpoints in %s: %s", dir, strerror(errno));
        *found_any = 1;
        return WC_ERR;
    }
    *found_any = n > 0;
    int rc = WC_ERR;
    for (int i = 0; i < n; i++) {
        char why[512];
        if (rc != WC_OK) {
            if (wc_ckpt_read(paths[i], ck, why, sizeof why) == WC_OK) {
                *path = paths[i];
                paths[i] = NULL;
                rc = WC_OK;
            } else {
                wc_warn("checkpoint %s is not usable: %s%s", paths[i], why,
                        i + 1 < n ? "; trying the previous one" : "");
            }
        }
        free(paths[i]);
    }
    free(paths);
    free(steps);
    return rc;
}

int wc_ckpt_resolve(const char *path, wc_ckpt *ck, char **resolved) {
    struct stat st;
    if (stat(path, &st) != 0) {
        wc_error("checkpoint %s: %s", path, strerror(errno));
        return WC_ERR;
    }
    if (S_ISDIR(st.st_mode)) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/checkpoints", path);
        const char *dir = stat(sub, &st) == 0 && S_ISDIR(st.st_mode) ? sub : path;
        int any = 0;
        if (wc_ckpt_latest(dir, ck, resolved, &any) == WC_OK) return WC_OK;
        wc_error("%s holds %s", dir, any ? "no valid checkpoint (see the warnings above)"
                                         : "no checkpoint (ckpt-*.wcp)");
        return WC_ERR;
    }
    char why[512];
    if (wc_ckpt_read(path, ck, why, sizeof why) != WC_OK) {
        wc_error("checkpoint %s is not usable: %s", path, why);
        return WC_ERR;
    }
    *resolved = wc_strdup(path);
    return WC_OK;
}
