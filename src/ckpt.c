/* ckpt.c: checkpoint files; see ckpt.h for the format and the crash-safety argument. */
#include "wildcpu/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "wildcpu/files.h"
#include "wildcpu/le.h"
#include "wildcpu/util.h"

static const unsigned char MAGIC[8] = {'W', 'C', 'K', 'P', 'T', '\r', '\n', 0x1a};
#define BOM 0x01020304u

/* The CRC of bytes after the CRC c of those before them. */
static uLong crc_more(uLong c, const unsigned char *bytes, size_t n) {
    /* zlib's crc32 takes uInt lengths: feed large payloads in pieces */
    for (size_t off = 0; off < n;) {
        uInt len = (uInt)WC_MIN(n - off, (size_t)1 << 30);
        c = crc32(c, bytes + off, len);
        off += len;
    }
    return c;
}

/* The CRC of the header without its CRC field: where a file's CRC starts. */
static uLong header_crc(const unsigned char *header) {
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, header, 40);
    return crc32(c, header + 44, WC_CKPT_HEADER - 44);
}

/* CRC of the header without its CRC field, then of the payload. */
static uint32_t file_crc(const unsigned char *header, const unsigned char *payload, size_t n) {
    return (uint32_t)crc_more(header_crc(header), payload, n);
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

/* The test hook of a slow disk: WILDCPU_TEST_SLOW_WRITE=SECONDS makes every checkpoint write
 * take that much longer (a sleep once the temporary file is written, before fsync and rename).
 * Tests prove with it that the training thread does not wait for a background write. */
static void slow_write(void) {
    const char *s = getenv("WILDCPU_TEST_SLOW_WRITE");
    double secs = s ? atof(s) : 0;
    if (!(secs > 0)) return;
    if (secs > 600) secs = 600;
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
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
        if (*written<crash_at && * written + chunk> crash_at) {
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

static int intact(const char *path, char *why, size_t why_size);
static void note_whole(const struct stat *st);
static int aside_name(const char *path, const char *suffix, char *aside, size_t size);

/* Deletes checkpoints beyond the newest `keep` at or before newest_step, by the step their
 * header holds. A file whose header does not validate is never deleted: it may be a newer
 * format's, or evidence of a fault; only what is known to be an older checkpoint goes. Nor is a
 * damaged one (its CRC wrong: a header intact over a payload that is not) counted among the
 * kept or deleted: it is set aside as .unusable, said once, so that `keep` whole checkpoints
 * stay (each file is read once to check it, from the page cache: intact). */
static void prune(const char *dir, int keep, long newest_step) {
    wc_ckpt_entry *e;
    int n = wc_ckpt_list(dir, 0, &e);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (!e[i].header_ok || e[i].step > newest_step) continue;
        char why[256] = "";
        const int whole_now = intact(e[i].path, why, sizeof why);
        if (whole_now < 0) /* unknown, left as it is: said each time, as a delete that fails */
            wc_warn("cannot check checkpoint %s (%s): not counted among the %d --keep keeps, "
                    "nor deleted",
                    e[i].path, why, keep);
        if (whole_now == 0) {
            char aside[4200];
            const int moved = aside_name(e[i].path, "unusable", aside, sizeof aside) &&
                              rename(e[i].path, aside) == 0;
            if (moved)
                wc_warn("%s is damaged (its CRC-32 does not match): not counted among the %d "
                        "checkpoints --keep keeps, and kept as %s",
                        e[i].path, keep, aside);
            else
                wc_warn("%s is damaged (its CRC-32 does not match): not counted among the %d "
                        "checkpoints --keep keeps, nor deleted (it cannot be set aside: %s)",
                        e[i].path, keep, strerror(errno));
        }
        if (whole_now != 1) continue;
        if (kept < keep) {
            kept++;
        } else if (unlink(e[i].path) != 0) {
            wc_warn("cannot delete old checkpoint %s: %s", e[i].path, strerror(errno));
        }
    }
    if (n > 0) wc_ckpt_list_free(e, n);
}

/* dst (*dst_size, room for compressBound(n)) = the zlib stream of src (n bytes), at level 1 with
 * Huffman coding only: parameters and optimizer moments are floats whose mantissas do not repeat,
 * so LZ77's string matching finds almost nothing. Measured on 168 MB of such floats, it takes
 * 0.36 of level 1's default strategy's time for a slightly smaller file (0.918 against 0.922 of
 * the raw size); any zlib reader inflates it. Fed in chunks: zlib counts in 32-bit units. */
static int deflate_huffman(unsigned char *dst, size_t *dst_size, const unsigned char *src,
                           size_t n) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (deflateInit2(&s, 1, Z_DEFLATED, 15, 8, Z_HUFFMAN_ONLY) != Z_OK) return WC_ERR;
    const size_t chunk = (size_t)1 << 30, room = *dst_size;
    size_t in = 0, out = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
        const size_t give = WC_MIN(chunk, n - in), space = WC_MIN(chunk, room - out);
        s.next_in = (Bytef *)(src + in), s.avail_in = (uInt)give;
        s.next_out = dst + out, s.avail_out = (uInt)space;
        rc = deflate(&s, in + give == n ? Z_FINISH : Z_NO_FLUSH);
        in += give - s.avail_in, out += space - s.avail_out;
        if (rc == Z_BUF_ERROR && space > 0) rc = Z_OK; /* nothing to do yet: more input */
    }
    deflateEnd(&s);
    *dst_size = out;
    return rc == Z_STREAM_END ? WC_OK : WC_ERR;
}

int wc_ckpt_write(const char *dir, const char *name, long step, const wc_ckpt_section *sections,
                  int n, int keep, double *seconds, size_t *bytes) {
    double t0 = wc_now();
    /* serialize the sections */
    size_t raw_size = 0;
    for (int i = 0; i < n; i++) raw_size += 4 + strlen(sections[i].name) + 8 + sections[i].size;
    unsigned char *raw = WC_ALLOC_FOR(raw_size, "a checkpoint's serialized state"), *p = raw;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(sections[i].name);
        wc_le_put_u32(p, (uint32_t)len), p += 4;
        memcpy(p, sections[i].name, len), p += len;
        wc_le_put_u64(p, sections[i].size), p += 8;
        if (sections[i].size) memcpy(p, sections[i].data, sections[i].size);
        p += sections[i].size;
    }
    size_t zsize = compressBound(raw_size);
    unsigned char *z = WC_ALLOC_FOR(zsize, "a checkpoint's compressed state");
    if (deflate_huffman(z, &zsize, raw, raw_size) != WC_OK) {
        wc_error("compressing the checkpoint failed");
        free(raw), free(z);
        return WC_ERR;
    }
    free(raw);
    unsigned char header[WC_CKPT_HEADER] = {0};
    memcpy(header, MAGIC, 8);
    wc_le_put_u32(header + 8, WC_CKPT_VERSION);
    wc_le_put_u32(header + 12, BOM);
    wc_le_put_u64(header + 16, (uint64_t)step);
    wc_le_put_u64(header + 24, raw_size);
    wc_le_put_u64(header + 32, zsize);
    wc_le_put_u32(header + 40, file_crc(header, z, zsize));

    char final[4096], tmp[4200];
    if (name)
        snprintf(final, sizeof final, "%s/%s", dir, name);
    else
        snprintf(final, sizeof final, "%s/ckpt-%08ld.wcp", dir, step);
    /* a name no reader takes for a checkpoint, removed at the next start if a crash left it */
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
    if (rc == WC_OK) slow_write();
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
        wc_remove_working_file(AT_FDCWD, tmp, tmp); /* nothing half-written may stay behind */
        return WC_ERR;
    }
    /* The new checkpoint exists; until its directory entry is durable it may not survive a
     * crash, so it is not counted as written (and the older ones are kept). */
    if (wc_fsync_path(dir, 1) != WC_OK) return WC_ERR;
    struct stat published;
    if (stat(final, &published) == 0) note_whole(&published); /* its CRC was computed here */
    if (keep > 0 && !name) prune(dir, keep, step);
    if (seconds) *seconds = wc_now() - t0;
    if (bytes) *bytes = WC_CKPT_HEADER + zsize;
    return WC_OK;
}

/* ---- reading ----------------------------------------------------------------------------- */

int wc_ckpt_refuse_as_output(const char *what, const char *path) {
    unsigned char head[sizeof MAGIC];
    struct stat st;
    /* a regular file only: a pipe must not be read (the output checks refuse it anyway) */
    if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return WC_EXIT_OK;
    FILE *f = fopen(path, "rb");
    const int is_ckpt = f && fread(head, 1, sizeof head, f) == sizeof head &&
                        memcmp(head, MAGIC, sizeof MAGIC) == 0;
    if (f) fclose(f);
    if (!is_ckpt) return WC_EXIT_OK;
    wc_error("refusing to write the %s to %s: it is a wildcpu checkpoint, which the %s would "
             "replace; give another path",
             what, path, what);
    return WC_EXIT_USAGE;
}

/* The header's own checks (no CRC: that needs the payload). size is the file's. */
static int check_header(const unsigned char *h, size_t size, char *why, size_t why_size) {
    if (memcmp(h, MAGIC, 8) != 0)
        return wc_reason(why, why_size, "not a wildcpu checkpoint (bad magic)");
    uint32_t version = wc_le_get_u32(h + 8);
    if (wc_le_get_u32(h + 12) != BOM)
        return wc_reason(why, why_size, "corrupted header (the format mark at byte 12 is wrong)");
    if (version != WC_CKPT_VERSION)
        return wc_reason(
            why, why_size, "format version %u, this wildcpu reads version %d%s", version,
            WC_CKPT_VERSION,
            version > WC_CKPT_VERSION ? " (written by a newer wildcpu, or a damaged header)" : "");
    uint64_t zsize = wc_le_get_u64(h + 32);
    if (zsize != size - WC_CKPT_HEADER)
        return wc_reason(why, why_size, "truncated or extended: %zu of %llu payload bytes present",
                         size - WC_CKPT_HEADER, (unsigned long long)zsize);
    uint64_t step = wc_le_get_u64(h + 16);
    if (step > WC_CKPT_MAX_STEP)
        return wc_reason(why, why_size, "implausible step %llu in the header",
                         (unsigned long long)step);
    return WC_OK;
}

/* zlib's inflate into a buffer that grows only as the stream really produces bytes, so a header
 * that claims a huge payload costs no memory beyond what the compressed bytes expand to. The
 * output must be exactly `expect` bytes. Returns the buffer or NULL with why set. */
static unsigned char *inflate_exact(const unsigned char *z, size_t zsize, size_t expect, char *why,
                                    size_t why_size) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK) {
        wc_reason(why, why_size, "zlib cannot start decompressing");
        return NULL;
    }
    size_t cap = WC_MIN(expect, WC_MAX((size_t)1 << 16, 2 * zsize)) + 1, have = 0, fed = 0;
    unsigned char *out = WC_ALLOC(cap);
    int zrc = Z_OK;
    while (zrc == Z_OK) {
        if (have == cap) {
            if (cap > expect) break; /* already one byte beyond what the header allows */
            size_t next = WC_MIN(expect + 1, 2 * cap);
            unsigned char *bigger = realloc(out, next);
            if (!bigger) {
                /* a reason, not an exit: the caller names the file, and a resume passes over
                 * it to the previous checkpoint (a payload of 1 GiB under a 1.2 GB ulimit -v
                 * ended the resume with no file named) */
                wc_reason(why, why_size,
                          "its payload of %zu bytes does not fit in this "
                          "process's memory",
                          expect);
                inflateEnd(&zs);
                free(out);
                return NULL;
            }
            out = bigger, cap = next;
        }
        if (zs.avail_in == 0 && fed < zsize) {
            size_t n = WC_MIN(zsize - fed, (size_t)1 << 30); /* avail_in is a uInt */
            zs.next_in = (unsigned char *)z + fed, zs.avail_in = (uInt)n, fed += n;
        }
        size_t room = WC_MIN(cap - have, (size_t)1 << 30);
        zs.next_out = out + have, zs.avail_out = (uInt)room;
        zrc = inflate(&zs, Z_NO_FLUSH);
        have += room - zs.avail_out;
        if (zrc == Z_BUF_ERROR && zs.avail_in == 0 && fed == zsize) break; /* input ran out */
        if (zrc == Z_BUF_ERROR) zrc = Z_OK;
    }
    int trailing = zs.avail_in != 0 || fed != zsize;
    inflateEnd(&zs);
    if (zrc != Z_STREAM_END || have != expect || trailing) {
        wc_reason(why, why_size,
                  "the compressed payload does not decompress to the %zu bytes the "
                  "header states",
                  expect);
        free(out);
        return NULL;
    }
    return out;
}

/* Printable ASCII, no spaces: what a section name may hold. */
static int good_name(const unsigned char *p, uint32_t n) {
    if (n == 0 || n >= sizeof((wc_ckpt_section *)0)->name) return 0;
    for (uint32_t i = 0; i < n; i++)
        if (p[i] <= 0x20 || p[i] >= 0x7f) return 0;
    return 1;
}

/* The section list of a payload; every length checked against what is left of it. */
static int parse_sections(wc_ckpt *ck, const unsigned char *raw, size_t raw_size, char *why,
                          size_t why_size) {
    int cap = 16;
    ck->sections = WC_CALLOC(cap, sizeof(wc_ckpt_section));
    for (size_t off = 0; off < raw_size;) {
        if (raw_size - off < 4)
            return wc_reason(why, why_size, "the section layout is inconsistent");
        uint32_t nlen = wc_le_get_u32(raw + off);
        off += 4;
        if (nlen > raw_size - off || raw_size - off - nlen < 8 || !good_name(raw + off, nlen))
            return wc_reason(why, why_size, "the section layout is inconsistent (section %d)",
                             ck->nsections + 1);
        if (ck->nsections == WC_CKPT_MAX_SECTIONS)
            return wc_reason(why, why_size, "more than %d sections", WC_CKPT_MAX_SECTIONS);
        if (ck->nsections == cap) {
            wc_ckpt_section *more = realloc(ck->sections, sizeof(wc_ckpt_section) * (cap *= 2));
            if (!more) wc_fatal("out of memory reading a checkpoint");
            ck->sections = more;
        }
        wc_ckpt_section *s = &ck->sections[ck->nsections];
        memcpy(s->name, raw + off, nlen);
        s->name[nlen] = '\0';
        off += nlen;
        uint64_t dlen = wc_le_get_u64(raw + off);
        off += 8;
        if (dlen > raw_size - off)
            return wc_reason(why, why_size, "section '%s' claims %llu bytes, %zu are left", s->name,
                             (unsigned long long)dlen, raw_size - off);
        if (wc_ckpt_find(ck, s->name))
            return wc_reason(why, why_size, "section '%s' appears twice", s->name);
        s->data = raw + off;
        s->size = (size_t)dlen;
        off += (size_t)dlen;
        ck->nsections++;
    }
    return WC_OK;
}

int wc_ckpt_parse(const void *file, size_t size, wc_ckpt *ck, char *why, size_t why_size) {
    const unsigned char *buf = file;
    memset(ck, 0, sizeof *ck);
    if (size == 0) return wc_reason(why, why_size, "empty file (0 bytes)");
    if (size < WC_CKPT_HEADER)
        return wc_reason(why, why_size, "truncated: shorter than the 64-byte header");
    if (check_header(buf, size, why, why_size) != WC_OK) return WC_ERR;
    const size_t zsize = size - WC_CKPT_HEADER;
    if (file_crc(buf, buf + WC_CKPT_HEADER, zsize) != wc_le_get_u32(buf + 40))
        return wc_reason(why, why_size, "CRC-32 mismatch: the file is corrupted");
    /* zlib's stream format cannot expand a byte to more than about 1032 */
    const uint64_t raw_size = wc_le_get_u64(buf + 24);
    if (raw_size > (uint64_t)zsize * 1032 + 1024 || raw_size > ((uint64_t)1 << 40))
        return wc_reason(why, why_size, "implausible payload size %llu for %zu compressed bytes",
                         (unsigned long long)raw_size, zsize);
    /* a payload this machine cannot hold is refused with a reason, not met with out-of-memory */
    if (raw_size > wc_physical_memory_bytes() / 2)
        return wc_reason(why, why_size,
                         "its payload of %llu bytes is more than half of this "
                         "machine's memory",
                         (unsigned long long)raw_size);
    unsigned char *raw =
        inflate_exact(buf + WC_CKPT_HEADER, zsize, (size_t)raw_size, why, why_size);
    if (!raw) return WC_ERR;
    ck->blob = raw;
    if (parse_sections(ck, raw, (size_t)raw_size, why, why_size) != WC_OK) {
        wc_ckpt_free(ck);
        return WC_ERR;
    }
    ck->step = (long)wc_le_get_u64(buf + 16);
    ck->version = wc_le_get_u32(buf + 8);
    ck->file_bytes = size;
    ck->payload_bytes = (size_t)raw_size;
    ck->crc = wc_le_get_u32(buf + 40);
    return WC_OK;
}

/* Opens path for reading only if it is a regular file: O_NONBLOCK so that a FIFO or a device
 * under a checkpoint's name can neither block the open nor the read. Returns the descriptor
 * (st filled) or -1 with why set. */
static int open_regular(const char *path, struct stat *st, char *why, size_t why_size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return wc_reason(why, why_size, "cannot open: %s", strerror(errno)), -1;
    if (fstat(fd, st) != 0) {
        wc_reason(why, why_size, "cannot stat: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        wc_reason(why, why_size, "not a regular file");
        close(fd);
        return -1;
    }
    return fd;
}

static int read_exact(int fd, void *buf, size_t n) {
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, WC_MIN(n - got, (size_t)1 << 30));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EIO; /* shorter than fstat said: it changed under us */
            return WC_ERR;
        }
        got += (size_t)r;
    }
    return WC_OK;
}

/* Whether the payload after the header (already read from fd) matches the header's CRC: 1, 0,
 * or -1 for a read error (errno set). Streamed, in bounded memory. */
static int streamed_crc(int fd, const unsigned char *header, size_t size) {
    uLong crc = header_crc(header);
    unsigned char chunk[1 << 16];
    for (size_t left = size - WC_CKPT_HEADER; left > 0;) {
        const size_t n = WC_MIN(left, sizeof chunk);
        if (read_exact(fd, chunk, n) != WC_OK) return -1;
        crc = crc_more(crc, chunk, n), left -= n;
    }
    return (uint32_t)crc == wc_le_get_u32(header + 40);
}

/* The files intact found whole in this process, by identity and last change: each is read
 * once, not at every checkpoint's pruning (--keep 1000 of a large model would read gigabytes
 * each time). A file changed since (a byte flipped in place) has another change time. */
typedef struct whole_file {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
} whole_file;
static whole_file *whole;
#define WHOLE_MAX 4096
static size_t nwhole, whole_cap;
static pthread_mutex_t whole_lock = PTHREAD_MUTEX_INITIALIZER; /* the background writer's too */

static whole_file identity(const struct stat *st) {
    return (whole_file){st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim};
}

static int same_identity(const whole_file *a, const whole_file *b) {
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Whether the file of st is noted whole. */
static int known_whole(const struct stat *st) {
    const whole_file id = identity(st);
    int known = 0;
    pthread_mutex_lock(&whole_lock);
    for (size_t i = 0; i < nwhole && !known; i++) known = same_identity(&whole[i], &id);
    pthread_mutex_unlock(&whole_lock);
    return known;
}

/* Notes the file of st whole: its CRC was computed (written) or checked (read) just now. */
static void note_whole(const struct stat *st) {
    pthread_mutex_lock(&whole_lock);
    /* a file replaced or gone leaves its entry: past WHOLE_MAX the older half is forgotten (a
     * file still there is read again, once) */
    if (nwhole == WHOLE_MAX) {
        memmove(whole, whole + WHOLE_MAX / 2, (WHOLE_MAX - WHOLE_MAX / 2) * sizeof *whole);
        nwhole -= WHOLE_MAX / 2;
    }
    if (nwhole == whole_cap) {
        whole_cap = whole_cap ? 2 * whole_cap : 16;
        whole_file *more = realloc(whole, whole_cap * sizeof *whole);
        if (!more) wc_fatal("out of memory noting a whole checkpoint");
        whole = more;
    }
    whole[nwhole++] = identity(st);
    pthread_mutex_unlock(&whole_lock);
}

/* Whether the checkpoint at path (its header valid) is whole: 1 when its CRC matches, 0 when it
 * does not (damaged), -1 when it cannot be opened or read (out of files, an I/O error: nothing is
 * known of it), with why. */
static int intact(const char *path, char *why, size_t why_size) {
    struct stat st;
    unsigned char header[WC_CKPT_HEADER];
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && known_whole(&st)) return 1; /* not opened */
    const int fd = open_regular(path, &st, why, why_size);
    if (fd < 0) return -1;
    int whole_now = (size_t)st.st_size >= WC_CKPT_HEADER ? -1 : 0; /* the header checked it */
    if (whole_now && read_exact(fd, header, sizeof header) == WC_OK)
        whole_now = streamed_crc(fd, header, (size_t)st.st_size);
    if (whole_now < 0) wc_reason(why, why_size, "read error: %s", strerror(errno));
    close(fd);
    if (whole_now == 1) note_whole(&st);
    return whole_now;
}

int wc_ckpt_read(const char *path, wc_ckpt *ck, char *why, size_t why_size) {
    memset(ck, 0, sizeof *ck);
    struct stat st;
    int fd = open_regular(path, &st, why, why_size);
    if (fd < 0) return WC_ERR;
    const size_t size = (size_t)st.st_size;
    unsigned char header[WC_CKPT_HEADER];
    int rc = WC_ERR;
    unsigned char *buf = NULL;
    /* the header first: a file that is not a checkpoint costs 64 bytes, not its size */
    if (size < WC_CKPT_HEADER) {
        rc = wc_ckpt_parse(NULL, size, ck, why, why_size);
    } else if (read_exact(fd, header, sizeof header) != WC_OK) {
        wc_reason(why, why_size, "read error: %s", strerror(errno));
    } else if (check_header(header, size, why, why_size) == WC_OK) {
        if (size > wc_physical_memory_bytes() / 2) {
            close(fd);
            return wc_reason(why, why_size, "%zu bytes: more than half of this machine's memory",
                             size);
        }
        /* the CRC streamed before anything is allocated: a large file that only starts like a
         * checkpoint costs a read, not its size in memory (nor, under a job's memory limit,
         * the out-of-memory killer); a checkpoint is then read again, from the page cache */
        const int crc = streamed_crc(fd, header, size);
        if (crc < 0 || lseek(fd, WC_CKPT_HEADER, SEEK_SET) != WC_CKPT_HEADER)
            wc_reason(why, why_size, "read error: %s", strerror(errno));
        else if (!crc)
            wc_reason(why, why_size, "CRC-32 mismatch: the file is corrupted");
        else if (!(buf = malloc(size)))
            wc_reason(why, why_size, "%zu bytes do not fit in this process's memory", size);
        else if (read_exact(fd, buf + WC_CKPT_HEADER, size - WC_CKPT_HEADER) != WC_OK)
            wc_reason(why, why_size, "read error: %s", strerror(errno));
        else
            rc = wc_ckpt_parse(memcpy(buf, header, sizeof header), size, ck, why, why_size);
    }
    close(fd);
    free(buf);
    if (rc == WC_OK) note_whole(&st); /* a resume's own checkpoint, read whole: not again */
    return rc;
}

void wc_ckpt_free(wc_ckpt *ck) {
    if (!ck) return;
    free(ck->sections);
    free(ck->blob);
    memset(ck, 0, sizeof *ck);
}

int wc_ckpt_still_there(const char *path, const wc_ckpt *ck) {
    struct stat st;
    char why[256];
    int fd = open_regular(path, &st, why, sizeof why);
    if (fd < 0) return 0;
    unsigned char h[WC_CKPT_HEADER];
    const int same = (size_t)st.st_size == ck->file_bytes && st.st_size >= WC_CKPT_HEADER &&
                     read_exact(fd, h, sizeof h) == WC_OK && wc_le_get_u32(h + 40) == ck->crc &&
                     (long)wc_le_get_u64(h + 16) == ck->step;
    close(fd);
    return same;
}

const wc_ckpt_section *wc_ckpt_find(const wc_ckpt *ck, const char *name) {
    for (int i = 0; i < ck->nsections; i++)
        if (strcmp(ck->sections[i].name, name) == 0) return &ck->sections[i];
    return NULL;
}

/* ---- directories ------------------------------------------------------------------------- */

/* The step a name ckpt-<digits>.wcp carries: 1 to 18 digits, so it cannot overflow; -1 for any
 * other name. */
static long name_step(const char *name) {
    size_t len = strlen(name);
    if (len < 10 || strncmp(name, "ckpt-", 5) != 0 || strcmp(name + len - 4, ".wcp") != 0)
        return -1;
    size_t digits = len - 9;
    if (digits > 18) return -1;
    long step = 0;
    for (const char *c = name + 5; c < name + len - 4; c++) {
        if (*c < '0' || *c > '9') return -1;
        step = step * 10 + (*c - '0');
    }
    return step;
}

/* The header of one listed file: its step, or why it is unusable. */
static void probe(wc_ckpt_entry *e) {
    struct stat st;
    e->why[0] = '\0';
    int fd = open_regular(e->path, &st, e->why, sizeof e->why);
    if (fd < 0) return;
    unsigned char h[WC_CKPT_HEADER];
    if ((size_t)st.st_size < WC_CKPT_HEADER)
        wc_reason(e->why, sizeof e->why,
                  st.st_size ? "truncated: shorter than the 64-byte header"
                             : "empty file (0 bytes)");
    else if (read_exact(fd, h, sizeof h) != WC_OK)
        wc_reason(e->why, sizeof e->why, "read error: %s", strerror(errno));
    else if (check_header(h, (size_t)st.st_size, e->why, sizeof e->why) == WC_OK) {
        e->header_ok = 1;
        e->step = (long)wc_le_get_u64(h + 16);
    }
    close(fd);
}

static int newer_first(const void *a, const void *b) {
    const wc_ckpt_entry *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? 1 : -1;
    return strcmp(x->path, y->path); /* a stable, deterministic order among equal steps */
}

int wc_ckpt_list(const char *dir, int warn, wc_ckpt_entry **entries) {
    *entries = NULL;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *name = e->d_name;
        if (strncmp(name, "ckpt-", 5) != 0 || strlen(name) < 9 ||
            strcmp(name + strlen(name) - 4, ".wcp") != 0)
            continue; /* temporary files (.ckpt-*.tmpN), best.wcp, anything else */
        long step = name_step(name);
        if (step < 0) {
            if (warn)
                wc_warn("ignoring %s/%s: not a checkpoint name (ckpt-<step>.wcp with at most "
                        "18 digits)",
                        dir, name);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            wc_ckpt_entry *more = realloc(*entries, sizeof(wc_ckpt_entry) * cap);
            if (!more) wc_fatal("out of memory listing %s", dir);
            *entries = more;
        }
        wc_ckpt_entry *en = &(*entries)[n++];
        memset(en, 0, sizeof *en);
        size_t len = strlen(dir) + strlen(name) + 2;
        en->path = WC_ALLOC(len);
        snprintf(en->path, len, "%s/%s", dir, name);
        en->name_step = en->step = step;
        probe(en);
    }
    closedir(d);
    if (n > 1) qsort(*entries, (size_t)n, sizeof(wc_ckpt_entry), newer_first);
    return n;
}

void wc_ckpt_list_free(wc_ckpt_entry *entries, int n) {
    for (int i = 0; i < n; i++) free(entries[i].path);
    free(entries);
}

int wc_ckpt_unreadable(const char *dir) {
    wc_ckpt_entry *e;
    const int n = wc_ckpt_list(dir, 0, &e);
    int denied = 0;
    for (int i = 0; i < n; i++) denied += access(e[i].path, R_OK) != 0 && errno == EACCES;
    if (n > 0) wc_ckpt_list_free(e, n);
    char best[4200];
    snprintf(best, sizeof best, "%s/%s", dir, WC_CKPT_BEST);
    denied += access(best, F_OK) == 0 && access(best, R_OK) != 0 && errno == EACCES;
    return denied;
}

const char *wc_ckpt_unreadable_note(const char *dir, char *buf, size_t size) {
    const int denied = wc_ckpt_unreadable(dir);
    if (denied > 0)
        snprintf(buf, size,
                 "; this user may not read %d of them (permission denied: another user's, "
                 "written under umask 077 say), which is no sign of damage: their owner can "
                 "make them readable (chmod g+r for a group) or run it; --fresh would set that "
                 "run aside and start over",
                 denied);
    else if (size)
        buf[0] = '\0';
    return buf;
}

/* The listing is taken again rather than a vanished file reported as not usable and the
 * directory, once its last listed file is gone, as holding none (ckpt.h). */
int wc_ckpt_vanished(const char *path) {
    struct stat st;
    return lstat(path, &st) != 0 && errno == ENOENT;
}

/* The warnings of one listing (at most one per file listed), said once it is known to be the
 * last: a file passed over in a listing that is then taken again (another file vanished) would
 * otherwise be reported once per listing. */
typedef struct {
    char **lines;
    int n;
} deferred_warnings;

static deferred_warnings deferred_for(int files) {
    return (deferred_warnings){.lines = WC_CALLOC((size_t)WC_MAX(files, 1), sizeof(char *))};
}

static void defer_warning(deferred_warnings *w, const char *path, const char *why,
                          const char *next) {
    const size_t size = strlen(path) + strlen(why) + strlen(next) + 64;
    w->lines[w->n] = WC_ALLOC(size);
    snprintf(w->lines[w->n++], size, "checkpoint %s is not usable: %s%s", path, why, next);
}

static void deferred_finish(deferred_warnings *w, int say) {
    for (int i = 0; i < w->n; i++) {
        if (say) wc_warn("%s", w->lines[i]);
        free(w->lines[i]);
    }
    free(w->lines);
    w->lines = NULL, w->n = 0;
}

int wc_ckpt_latest(const char *dir, wc_ckpt_check check, void *ctx, wc_ckpt *ck, char **path,
                   int *found_any) {
    for (int listing = 1;; listing++) {
        wc_ckpt_entry *e;
        int n = wc_ckpt_list(dir, listing == 1, &e);
        if (n < 0) {
            /* unreadable is not empty: the caller must not start over on top of it */
            wc_error("cannot list the checkpoints in %s: %s", dir, strerror(errno));
            *found_any = 1;
            return WC_ERR;
        }
        *found_any = n > 0;
        int rc = WC_ERR, list_again = 0;
        deferred_warnings passed_over = deferred_for(n);
        for (int i = 0; i < n && rc != WC_OK && !list_again; i++) {
            char why[512];
            const char *next = i + 1 < n ? "; trying the previous one" : "";
            if (!e[i].header_ok) {
                if (listing < WC_CKPT_LISTINGS && wc_ckpt_vanished(e[i].path)) {
                    list_again = 1;
                    continue;
                }
                defer_warning(&passed_over, e[i].path, e[i].why, next);
                continue;
            }
            if (wc_ckpt_read(e[i].path, ck, why, sizeof why) != WC_OK ||
                (check && check(ck, ctx, why, sizeof why) != WC_OK)) {
                wc_ckpt_free(ck);
                if (listing < WC_CKPT_LISTINGS && wc_ckpt_vanished(e[i].path)) {
                    list_again = 1;
                    continue;
                }
                defer_warning(&passed_over, e[i].path, why, next);
                continue;
            }
            deferred_finish(&passed_over, 1); /* before what is said of the one used */
            if (e[i].name_step != ck->step)
                wc_warn("%s holds step %ld (its name says %ld): it is used as step %ld", e[i].path,
                        ck->step, e[i].name_step, ck->step);
            *path = wc_strdup(e[i].path);
            rc = WC_OK;
        }
        deferred_finish(&passed_over, !list_again);
        wc_ckpt_list_free(e, n);
        if (!list_again) return rc;
    }
}

/* A free name for `path` set aside: path.SUFFIX, else path.SUFFIX-2, ... (0: none free). */
static int aside_name(const char *path, const char *suffix, char *aside, size_t size) {
    struct stat st;
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(aside, size, "%s.%s", path, suffix);
        else
            snprintf(aside, size, "%s.%s-%d", path, suffix, k);
        if (lstat(aside, &st) != 0 && errno == ENOENT) return 1;
    }
    return 0;
}

int wc_ckpt_set_aside(const char *dir, long step, const char *suffix, char *aside, size_t size) {
    char path[4200];
    snprintf(path, sizeof path, "%s/ckpt-%08ld.wcp", dir, step);
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (!aside_name(path, suffix, aside, size))
        errno = EEXIST;
    else if (rename(path, aside) == 0)
        return 1;
    wc_warn("%s could not be set aside as %s: %s", path, aside, strerror(errno));
    return -1;
}

int wc_ckpt_keep_passed_over(const char *dir, const char *resumed, long step, long last) {
    wc_ckpt_entry *e;
    const int n = wc_ckpt_list(dir, 0, &e);
    int rc = WC_OK;
    for (int i = 0; i < n && rc == WC_OK; i++) {
        const int passed_over = !e[i].header_ok || e[i].step > step;
        const int written_again = e[i].name_step > step && e[i].name_step <= last;
        if (!passed_over || !written_again || wc_same_file(e[i].path, resumed)) continue;
        char aside[4200];
        const int free_name = aside_name(e[i].path, "unusable", aside, sizeof aside);
        /* rename would replace the last name tried, itself a file kept aside */
        if (!free_name) errno = EEXIST;
        if (free_name && rename(e[i].path, aside) == 0) {
            wc_warn("%s, passed over as not usable, is kept as %s: this run resumes from step "
                    "%ld and writes checkpoints of later steps under that name",
                    e[i].path, aside, step);
        } else {
            wc_error("%s, passed over as not usable, cannot be kept aside as %s (%s): refusing "
                     "to resume, which would write a checkpoint of a later step in its place",
                     e[i].path, aside, strerror(errno));
            rc = WC_ERR;
        }
    }
    wc_ckpt_list_free(e, WC_MAX(n, 0));
    return rc;
}

/* wc_ckpt_dir_of, saying why DIR/checkpoints cannot hold checkpoints only when say is set. */
static int find_ckpt_dir(const char *dir, char *buf, size_t size, int say) {
    struct stat st;
    snprintf(buf, size, "%s/" WC_CKPT_DIR, dir);
    if (stat(buf, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return WC_OK;
        if (say)
            wc_error("%s is not a directory, so no run can keep its checkpoints there (move it "
                     "away)",
                     buf);
        return WC_ERR;
    }
    const int err = errno;
    if (lstat(buf, &st) != 0 && errno == ENOENT) {
        snprintf(buf, size, "%s", dir);
        return WC_OK;
    }
    if (!say) return WC_ERR;
    char target[4096];
    const ssize_t n = S_ISLNK(st.st_mode) ? readlink(buf, target, sizeof target - 1) : -1;
    target[n > 0 ? n : 0] = '\0';
    if (n > 0)
        wc_error("%s is a symbolic link to %s, which cannot be reached (%s): is its file system "
                 "mounted on this node?",
                 buf, target, strerror(err));
    else
        wc_error("cannot reach %s: %s", buf, strerror(err));
    return WC_ERR;
}

int wc_ckpt_dir_of(const char *dir, char *buf, size_t size) {
    return find_ckpt_dir(dir, buf, size, 1);
}

int wc_ckpt_dir_quietly(const char *dir, char *buf, size_t size) {
    return find_ckpt_dir(dir, buf, size, 0);
}

int wc_ckpt_resolve(const char *path, wc_ckpt_check check, void *ctx, wc_ckpt *ck,
                    char **resolved) {
    struct stat st;
    if (stat(path, &st) != 0) {
        wc_error("checkpoint %s: %s", path, strerror(errno));
        return WC_ERR;
    }
    if (S_ISDIR(st.st_mode)) {
        char dir[4096];
        if (wc_ckpt_dir_of(path, dir, sizeof dir) != WC_OK) return WC_ERR;
        char best[4200], why[512];
        snprintf(best, sizeof best, "%s/%s", dir, WC_CKPT_BEST);
        if (access(best, F_OK) == 0) {
            if (wc_ckpt_read(best, ck, why, sizeof why) == WC_OK &&
                (!check || check(ck, ctx, why, sizeof why) == WC_OK)) {
                *resolved = wc_strdup(best);
                return WC_OK;
            }
            wc_ckpt_free(ck);
            wc_warn("checkpoint %s is not usable: %s; taking the newest checkpoint instead", best,
                    why);
        }
        int any = 0;
        if (wc_ckpt_latest(dir, check, ctx, ck, resolved, &any) == WC_OK) return WC_OK;
        char note[400];
        wc_error("%s holds %s%s", dir,
                 any ? "no valid checkpoint (see the warnings above)"
                     : "no checkpoint (ckpt-*.wcp)",
                 wc_ckpt_unreadable_note(dir, note, sizeof note));
        return WC_ERR;
    }
    char why[512];
    if (wc_ckpt_read(path, ck, why, sizeof why) != WC_OK ||
        (check && check(ck, ctx, why, sizeof why) != WC_OK)) {
        wc_ckpt_free(ck);
        wc_error("checkpoint %s is not usable: %s", path, why);
        return WC_ERR;
    }
    *resolved = wc_strdup(path);
    return WC_OK;
}
