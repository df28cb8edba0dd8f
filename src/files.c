/* files.c: whole-file reads, atomic replacement and the checks on output paths; see files.h. */
#define _POSIX_C_SOURCE 200809L
#include "wildcpu/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "wildcpu/util.h"

/* Whether name[at, at + len) names a local file that is no directory. */
static int local_file(const char *name, size_t at, size_t len) {
    if (len == 0 || len >= 4096) return 0;
    char p[4096];
    memcpy(p, name + at, len);
    p[len] = '\0';
    struct stat st;
    return stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* The length of name's "DRIVER:" prefix (letters, digits and '_', then ':'), else 0. */
static size_t driver_prefix(const char *name) {
    size_t d = 0;
    while (name[d] == '_' || (name[d] >= 'A' && name[d] <= 'Z') ||
           (name[d] >= 'a' && name[d] <= 'z') || (d > 0 && name[d] >= '0' && name[d] <= '9'))
        d++;
    return d > 0 && name[d] == ':' ? d + 1 : 0;
}

int wc_gdal_name(const char *name) {
    return strncmp(name, "/vsi", 4) == 0 || driver_prefix(name) > 0;
}

int wc_file_behind(const char *name, size_t *at, size_t *len) {
    struct stat st;
    if (stat(name, &st) == 0) return 0;
    static const char *const archives[] = {"/vsizip/", "/vsitar/", "/vsigzip/", "/vsi7z/",
                                           "/vsirar/"};
    for (size_t k = 0; k < sizeof archives / sizeof archives[0]; k++) {
        const size_t skip = strlen(archives[k]);
        if (strncmp(name, archives[k], skip) != 0) continue;
        /* /vsizip//abs/a.zip/x (absolute) or /vsizip/rel/a.zip/x: each prefix up to a '/' */
        for (const char *c = name + skip + (name[skip] == '/');; c++) {
            if (*c != '/' && *c != '\0') continue;
            const size_t from = skip;
            if (c > name + from && local_file(name, from, (size_t)(c - name) - from)) {
                *at = from, *len = (size_t)(c - name) - from;
                return 1;
            }
            if (!*c) return 0;
        }
    }
    if (strncmp(name, "/vsi", 4) == 0) return 0; /* /vsicurl/, /vsimem/...: nothing local */
    const size_t d = driver_prefix(name);
    if (d == 0) return 0;
    /* each run of the rest's ':'-separated parts, from every part's start, longest first */
    for (const char *i = name + d; i; i = strchr(i, ':') ? strchr(i, ':') + 1 : NULL) {
        for (const char *j = i + strlen(i); j > i; j--) {
            if (*j != ':' && *j != '\0') continue;
            size_t from = (size_t)(i - name), n = (size_t)(j - i);
            if (n >= 2 && name[from] == '"' && name[from + n - 1] == '"') from++, n -= 2;
            if (local_file(name, from, n)) {
                *at = from, *len = n;
                return 1;
            }
        }
    }
    return 0;
}

char *wc_file_behind_dup(const char *name) {
    size_t at, len;
    if (!wc_file_behind(name, &at, &len)) return NULL;
    char *p = WC_ALLOC(len + 1);
    memcpy(p, name + at, len);
    p[len] = '\0';
    return p;
}

void wc_path_absolute(const char *path, char *out, size_t size) {
    char cwd[4096];
    size_t at = 0, len = 0;
    const int inside = wc_file_behind(path, &at, &len);
    if (!inside) at = 0, len = strlen(path);
    if (path[at] == '/' || strstr(path, "://") || (!inside && wc_gdal_name(path)) ||
        !getcwd(cwd, sizeof cwd)) {
        snprintf(out, size, "%s", path);
        return;
    }
    size_t skip = 0;
    while (path[at + skip] == '.' && path[at + skip + 1] == '/') skip += 2;
    snprintf(out, size, "%.*s%s/%s", (int)at, path, cwd, path + at + skip);
}

const char *wc_special_file_kind(const char *path) {
    /* GDAL's name for standard input: a stream that waits for a writer and is read once (the
     * ranks and reader threads each read a raster again) */
    if (strstr(path, "/vsistdin")) return "standard input"; /* also inside: /vsigzip//vsistdin/ */
    struct stat st;
    char *behind = NULL;
    if (stat(path, &st) != 0 && (!(behind = wc_file_behind_dup(path)) || stat(behind, &st) != 0)) {
        free(behind);
        return NULL;
    }
    free(behind);
    if (S_ISFIFO(st.st_mode)) return "a pipe (FIFO)";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
    if (S_ISSOCK(st.st_mode)) return "a socket";
    return NULL;
}

int wc_refuse_special_file(const char *what, const char *path) {
    const char *special = wc_special_file_kind(path);
    if (!special) return WC_OK;
    wc_error("%s %s is %s, not a file GDAL can read (it would wait on it, or read it without end)",
             what, path, special);
    return WC_ERR;
}

int wc_open_regular(const char *path, size_t max, char *why, size_t why_size) {
    const char *special = wc_special_file_kind(path); /* before opening: a device may act */
    if (special) {
        snprintf(why, why_size, "it is %s, not a regular file", special);
        errno = EINVAL;
        return -1;
    }
    /* O_NONBLOCK: a pipe made in between would otherwise be waited on for ever */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        snprintf(why, why_size, "%s", strerror(err));
        errno = err;
        return -1;
    }
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0) {
        err = errno;
        snprintf(why, why_size, "%s", strerror(err));
    } else if (S_ISDIR(st.st_mode)) {
        err = EISDIR;
        snprintf(why, why_size, "it is a directory");
    } else if (!S_ISREG(st.st_mode)) {
        err = EINVAL;
        snprintf(why, why_size, "it is not a regular file (a pipe, a device or a socket)");
    } else if ((uint64_t)st.st_size > max) {
        err = EFBIG;
        snprintf(why, why_size, "it is %lld bytes, more than the %zu such a file may have",
                 (long long)st.st_size, max);
    }
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

char *wc_read_file_limited(const char *path, size_t max, char *why, size_t why_size) {
    const int fd = wc_open_regular(path, max, why, why_size);
    if (fd < 0) return NULL;
    struct stat st;
    char *s = NULL;
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_size, "%s", strerror(errno));
    } else {
        const size_t size = (size_t)st.st_size;
        s = WC_ALLOC(size + 1);
        size_t n = 0;
        int err = 0;
        while (n < size) {
            const ssize_t r = read(fd, s + n, size - n);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) err = errno;
            if (r <= 0) break;
            n += (size_t)r;
        }
        if (n != size) {
            snprintf(why, why_size, "reading it failed: %s",
                     err ? strerror(err) : "it became shorter while read");
            free(s);
            s = NULL;
            errno = err ? err : EIO;
        } else if (memchr(s, '\0', n)) {
            /* text read as a C string would end there, silently */
            snprintf(why, why_size, "it holds a NUL byte at offset %zu: it is not a text file",
                     (size_t)((char *)memchr(s, '\0', n) - s));
            free(s);
            s = NULL;
            errno = EILSEQ;
        } else {
            s[n] = '\0';
        }
    }
    close(fd);
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

/* Whether NAME is one of `names` (an entry ending in '*' is a prefix); NULL takes any. */
static int name_listed(const char *name, const char *const *names) {
    if (!names) return 1;
    for (; *names; names++) {
        const size_t n = strlen(*names);
        if (n && (*names)[n - 1] == '*' ? !strncmp(name, *names, n - 1) : !strcmp(name, *names))
            return 1;
    }
    return 0;
}

/* Whether a directory entry is a working file of wc_temp_path's (".NAME.tmp-PID" or
 * ".NAME.out-PID", perhaps with a file GDAL writes beside it: its ".aux.xml" sidecar, the COG
 * driver's overviews ".ovr.tmp", a third of the map's size) of one of `names`, not this
 * process's; its pid in *pid. */
static int is_leftover(const char *entry, const char *const *names, long *pid) {
    static const char *const gdal_beside[] = {".aux.xml", ".ovr.tmp", ".ovr"};
    if (entry[0] != '.') return 0;
    char *e = wc_strdup(entry + 1);
    const size_t n = strlen(e);
    for (size_t k = 0; k < sizeof gdal_beside / sizeof gdal_beside[0]; k++) {
        const size_t len = strlen(gdal_beside[k]);
        if (n > len && !strcmp(e + n - len, gdal_beside[k])) {
            e[n - len] = '\0';
            break;
        }
    }
    int found = 0;
    for (const char *tag = ".tmp-"; tag && !found; tag = !strcmp(tag, ".tmp-") ? ".out-" : NULL) {
        char *at = e;
        for (char *s; (s = strstr(at, tag)) != NULL;) at = s + 1; /* the last one */
        if (at == e) continue;
        char *mark = at - 1;
        const char *digits = mark + strlen(tag);
        if (!*digits || strspn(digits, "0123456789") != strlen(digits)) continue;
        *pid = strtol(digits, NULL, 10);
        if (*pid == (long)getpid()) continue;
        *mark = '\0';
        found = mark > e && name_listed(e, names);
    }
    free(e);
    return found;
}

/* Whether the working file may still be written: its process lives on this host, or it changed
 * within the last LEFTOVER_QUIET_S (a process on another node of a shared file system writes
 * its map strip by strip; one killed stops). */
#define LEFTOVER_QUIET_S (10 * 60)
static int maybe_written(const char *path, long pid) {
    if (pid > 0 && pid <= INT_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) return 1;
    struct stat st;
    return lstat(path, &st) == 0 && time(NULL) - st.st_mtime < LEFTOVER_QUIET_S;
}

/* When process pid started, in seconds since the epoch (/proc/PID/stat's start time, in clock
 * ticks after /proc/stat's boot time), or -1 when /proc does not say. */
static double process_start(long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    const size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after the name, which may hold spaces and parens */
    /* a process killed but not yet reaped (state Z, or X while it goes) writes nothing more */
    if (p && (p[1] == ' ') && (p[2] == 'Z' || p[2] == 'X')) return -1;
    unsigned long long ticks = 0;
    for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", &ticks) != 1) return -1;
    f = fopen("/proc/stat", "r");
    long long boot = -1;
    while (f && fgets(buf, sizeof buf, f))
        if (sscanf(buf, "btime %lld", &boot) == 1) break;
    if (f) fclose(f);
    const long hz = sysconf(_SC_CLK_TCK);
    return boot < 0 || hz <= 0 ? -1 : (double)boot + (double)ticks / (double)hz;
}

/* Whether the working file `path` is being written by a wildcpu process alive on this host:
 * pid lives (not a zombie), is named wildcpu, and started before the file last changed (a
 * killed run's pid may have been given to another process since, another wildcpu included).
 * Where /proc does not say, no. */
static int written_by_live_wildcpu(const char *path, long pid) {
    if (pid <= 0 || pid > INT_MAX || (kill((pid_t)pid, 0) != 0 && errno != EPERM)) return 0;
    char proc[64], comm[32] = "";
    snprintf(proc, sizeof proc, "/proc/%ld/comm", pid);
    FILE *f = fopen(proc, "r");
    const int named = f && fgets(comm, sizeof comm, f) != NULL;
    if (f) fclose(f);
    struct stat st;
    const double started = process_start(pid);
    return named && strncmp(comm, "wildcpu", 7) == 0 && started >= 0 && lstat(path, &st) == 0 &&
           started <= (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec + 1.0;
}

/* The leftovers this process has warned of: a training checks its map's name when it prepares
 * the run directory (a live writer refuses the run before its first step) and again when it
 * claims the map, and said the same files twice in one run. Each is said once per process. */
static char **warned;
static size_t nwarned;

/* Whether path was said before; if not, it is now taken as said. */
static int warned_before(const char *path) {
    for (size_t i = 0; i < nwarned; i++)
        if (!strcmp(warned[i], path)) return 1;
    char **more = realloc(warned, sizeof(char *) * (nwarned + 1));
    if (!more) return 0; /* said again rather than lost */
    warned = more, warned[nwarned++] = wc_strdup(path);
    return 0;
}

int wc_temp_leftovers(const char *dir, const char *const *names, int remove, long *live_writer) {
    if (live_writer) *live_writer = 0;
    DIR *d = opendir(*dir ? dir : ".");
    if (!d) return 0;
    int found = 0, listed = 0, fresh = 0;
    char list[1024] = "";
    for (struct dirent *en; (en = readdir(d)) != NULL;) {
        long pid = 0;
        if (!is_leftover(en->d_name, names, &pid)) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", *dir ? dir : ".", en->d_name);
        if (remove) {
            if (maybe_written(path, pid)) continue;
            found++;
            if (unlink(path) == 0)
                wc_warn("removed %s, the working file of a run that was killed", path);
            continue;
        }
        if (live_writer && written_by_live_wildcpu(path, pid)) {
            *live_writer = pid;
            continue;
        }
        struct stat st;
        if (lstat(path, &st) != 0 && errno == ENOENT) continue; /* its writer has ended since */
        found++;
        if (warned_before(path)) continue;
        fresh++;
        if (strlen(list) + strlen(path) + 8 < sizeof list) {
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", *list ? ", " : "",
                     path);
            listed++;
        }
    }
    closedir(d);
    if (!remove && fresh)
        wc_warn("%d working file%s of another run lie%s beside the output (a run killed by "
                "SIGKILL or for memory leaves them): %s%s; not removed, since a run on another "
                "node may still be writing %s: delete %s when none is",
                fresh, fresh == 1 ? "" : "s", fresh == 1 ? "s" : "", list,
                listed < fresh ? ", ..." : "", fresh == 1 ? "it" : "them",
                fresh == 1 ? "it" : "them");
    return found;
}

/* The claims this process holds: removed by wc_claim_release, or at exit (an error before the
 * writer came, in a process that ends there). */
static char **claims;
static size_t nclaims;
static void drop_claims(void) {
    for (size_t i = 0; i < nclaims; i++)
        if (claims[i]) unlink(claims[i]);
}

long wc_output_writer(const char *path) {
    char *dir = wc_dir_of(path);
    const char *slash = strrchr(path, '/');
    const char *const names[] = {slash ? slash + 1 : path, NULL};
    long writer = 0;
    wc_temp_leftovers(dir, names, 0, &writer);
    free(dir);
    return writer;
}

/* An exclusive flock on the output's directory, held while this process looks for another
 * writer and makes its claim (a directory listing: milliseconds), so that of two arriving
 * together the second sees the first's claim. -1 where the directory cannot be locked within
 * about 2 s (a file system without flock; a lock someone else holds, as `flock DIR command`
 * does for its whole command): the caller claims first and looks after, where two together both
 * refuse, rather than waiting for ever. */
static int lock_directory_of(const char *path) {
    char *dir = wc_dir_of(path);
    const int fd = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return -1;
    for (int tries = 0; tries < 200; tries++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
        if (errno != EWOULDBLOCK && errno != EINTR) break;
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL); /* 10 ms */
    }
    close(fd);
    return -1;
}

long wc_claim_output(const char *path) {
    char *claim = wc_temp_path(path, "tmp");
    const int lock = lock_directory_of(path);
    long writer = lock >= 0 ? wc_output_writer(path) : 0;
    /* not created (a leftover of this pid, a directory not writable): no claim, and the writer
     * says what is wrong */
    const int fd = writer ? -1 : open(claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    if (lock < 0 && fd >= 0) writer = wc_output_writer(path);
    if (lock >= 0) close(lock); /* releases the flock */
    if (fd < 0 || writer) {
        if (fd >= 0) unlink(claim);
        free(claim);
        return writer;
    }
    if (!nclaims) atexit(drop_claims);
    char **more = realloc(claims, sizeof(char *) * (nclaims + 1));
    if (!more) wc_fatal("out of memory claiming %s", path);
    claims = more, claims[nclaims++] = claim;
    return 0;
}

void wc_claim_release(const char *path) {
    char *claim = wc_temp_path(path, "tmp");
    for (size_t i = 0; i < nclaims; i++)
        if (claims[i] && !strcmp(claims[i], claim)) {
            /* still the empty claim (the writer renames its working file away, or removes it;
             * one it could not remove was named by it and holds data: left) */
            struct stat st;
            if (lstat(claim, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) unlink(claim);
            free(claims[i]);
            claims[i] = NULL;
        }
    free(claim);
}

char *wc_sibling_path(const char *path, const char *suffix) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t keep = dot && dot > base ? (size_t)(dot - path) : strlen(path); /* ".x" is a name */
    size_t n = keep + strlen(suffix) + 1;
    char *t = WC_ALLOC(n);
    snprintf(t, n, "%.*s%s", (int)keep, path, suffix);
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

char *wc_dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return wc_strdup(".");
    if (slash == path) return wc_strdup("/");
    char *d = wc_strdup(path);
    d[slash - path] = '\0';
    return d;
}

void wc_fs_shortage(const char *dir, char *out, size_t size) {
    struct statvfs fs;
    char free_text[32];
    out[0] = '\0';
    if (statvfs(dir, &fs) != 0 || (fs.f_flag & ST_RDONLY) || access(dir, W_OK) != 0) return;
    if (fs.f_files > 0 && fs.f_favail == 0) /* files, not bytes, ran out */
        snprintf(out, size, " (the file system of %s has no inodes left: out of files?)", dir);
    else if ((uint64_t)fs.f_bavail * fs.f_frsize < ((uint64_t)64 << 20))
        snprintf(
            out, size, " (the file system of %s has %s free: out of space?)", dir,
            wc_fmt_bytes(free_text, sizeof free_text, (double)fs.f_bavail * (double)fs.f_frsize));
    else {
        /* a file-size limit (ulimit -f, a batch system's) fails the write with EFBIG, which
         * libtiff reports as "Error fetching directory count" or a seek error, naming no limit;
         * only one below the free space can be what stopped a file (a generous site limit is
         * not named as the cause of another failure) */
        struct rlimit fsize;
        if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
            (double)fsize.rlim_cur < (double)fs.f_bavail * (double)fs.f_frsize)
            snprintf(out, size, " (the file-size limit (ulimit -f) is %s: too low for it?)",
                     wc_fmt_bytes(free_text, sizeof free_text, (double)fsize.rlim_cur));
    }
}

void wc_remove_working_file(int dir_fd, const char *name, const char *shown) {
    if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT) return;
    const int err = errno; /* EROFS even for a file that is not there */
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    wc_warn("could not remove the working file %s: %s; it is left, remove it by hand", shown,
            strerror(err));
}

int wc_fsync_parent(const char *path) {
    char *dir = wc_dir_of(path);
    int rc = wc_fsync_path(dir, 1);
    free(dir);
    return rc;
}

/* The absolute, symlink-free path p names; for a file that does not exist yet, the real path
 * of its directory plus its name. NULL when the directory does not exist either. */
static char *resolve_path(const char *p) {
    char buf[PATH_MAX];
    if (realpath(p, buf)) return wc_strdup(buf);
    char *dir = wc_strdup(p), *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : p;
    if (slash) *slash = '\0';
    const char *d = slash ? (*dir ? dir : "/") : ".";
    char *out = NULL;
    if (realpath(d, buf)) {
        size_t n = strlen(buf) + strlen(base) + 2;
        out = WC_ALLOC(n);
        snprintf(out, n, "%s/%s", strcmp(buf, "/") == 0 ? "" : buf, base);
    }
    free(dir);
    return out;
}

/* What stat said of a path: 0 and st, or the errno it failed with. */
typedef struct {
    int err;
    struct stat st;
} stat_result;

static stat_result stat_of(const char *path) {
    stat_result r = {0};
    if (stat(path, &r.st) != 0) r.err = errno;
    return r;
}

/* wc_same_file from each path's stat. A path that exists and one that does not (ENOENT) name
 * two files without resolving either: resolving took 3 realpath calls (a dozen readlinks) per
 * pair, and a run compares each file of its mosaic with each of its outputs, most of which do
 * not exist yet (1,024 tiles of 3 files: 3.5 s of 5.5 s before planning). */
static int same_file_as(const char *a, const stat_result *sa, const char *b,
                        const stat_result *sb) {
    if (!sa->err && !sb->err)
        return sa->st.st_dev == sb->st.st_dev && sa->st.st_ino == sb->st.st_ino;
    if ((!sa->err && sb->err == ENOENT) || (sa->err == ENOENT && !sb->err)) return 0;
    char *ra = resolve_path(a), *rb = resolve_path(b);
    int same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}

int wc_same_file(const char *a, const char *b) {
    const stat_result sa = stat_of(a), sb = stat_of(b);
    return same_file_as(a, &sa, b, &sb);
}

int wc_path_within(const char *path, const char *dir) {
    char *rp = resolve_path(path), *rd = resolve_path(dir);
    size_t n = rd ? strlen(rd) : 0;
    int within = rp && rd && strncmp(rp, rd, n) == 0 && (rp[n] == '\0' || rp[n] == '/');
    free(rp);
    free(rd);
    return within || wc_same_file(path, dir);
}

int wc_check_outputs_not_inputs(const char *const *outputs, const char *const *what_out,
                                int noutputs, const char *const *moved_dirs, int nmoved,
                                const char *const *inputs) {
    /* each output's stat once, each input's once: a mosaic's thousands of files meet each
     * output */
    stat_result *out_st = WC_ALLOC(sizeof *out_st * (size_t)WC_MAX(noutputs, 1));
    for (int i = 0; i < noutputs; i++) out_st[i] = stat_of(outputs[i]);
    int rc = WC_OK;
    for (int k = 0; rc == WC_OK && inputs && inputs[k]; k++) {
        const stat_result in_st = stat_of(inputs[k]);
        for (int i = 0; rc == WC_OK && i < noutputs; i++)
            if (same_file_as(inputs[k], &in_st, outputs[i], &out_st[i])) {
                wc_error("refusing to write %s to %s: that is %s, an input of this command; "
                         "give the output another path or another --out directory",
                         what_out[i], outputs[i], inputs[k]);
                rc = WC_ERR;
            }
        for (int i = 0; rc == WC_OK && i < nmoved; i++)
            if (wc_path_within(inputs[k], moved_dirs[i])) {
                wc_error("refusing to start: %s is an input, and lies in %s, which this command "
                         "moves aside (--fresh); choose another --out directory",
                         inputs[k], moved_dirs[i]);
                rc = WC_ERR;
            }
    }
    free(out_st);
    return rc;
}

#define DERIVED_SUFFIX ".aux.xml" /* the longest GDAL adds (".ovr", ".msk" are shorter) */

size_t wc_path_derived_length(const char *path) {
    char *tmp = wc_temp_path(path, "tmp"), pid[24];
    /* with the longest process id Linux gives (pid_max up to 4194304: 7 digits), so that a path
     * passes or fails whatever this run's id is */
    const size_t digits = (size_t)snprintf(pid, sizeof pid, "%ld", (long)getpid());
    const size_t n = strlen(tmp) - digits + 7 + strlen(DERIVED_SUFFIX);
    free(tmp);
    return n;
}

int wc_check_path_length(const char *what, const char *path) {
    const size_t longest = wc_path_derived_length(path), extra = longest - strlen(path);
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    char *dir = wc_dir_of(path);
    long name_max = pathconf(dir, _PC_NAME_MAX);
    free(dir);
    if (name_max <= 0) name_max = 255; /* the directory does not exist yet: the usual limit */
    if (longest >= WC_GDAL_PATH_BUFFER) {
        wc_error("refusing to write the %s to a path of %zu bytes (%.60s...): its temporary name "
                 "and sidecar are %zu bytes longer, and GDAL takes paths shorter than %d bytes; "
                 "give a path of at most %zu bytes (a relative one, or a shorter directory)",
                 what, strlen(path), path, extra, WC_GDAL_PATH_BUFFER,
                 WC_GDAL_PATH_BUFFER - 1 - extra);
        return WC_ERR;
    }
    if ((long)(strlen(base) + extra) > name_max) {
        wc_error("refusing to write the %s to %s: its file name, %zu bytes, leaves no room for "
                 "its temporary name and sidecar (%zu bytes longer) within this file system's "
                 "%ld; give a name of at most %zu bytes",
                 what, path, strlen(base), extra, name_max, (size_t)name_max - extra);
        return WC_ERR;
    }
    return WC_OK;
}

int wc_check_dir_length(const char *writer, const char *dir, size_t longest, const char *name) {
    if (longest < WC_GDAL_PATH_BUFFER) return WC_OK;
    const size_t dir_len = strlen(dir), extra = longest - dir_len;
    wc_error("--out %.60s... is %zu bytes long: %s writes files below it up to %zu bytes longer "
             "(%s's temporary name and sidecar), and GDAL takes paths shorter than %d bytes; give "
             "an --out of at most %zu bytes (a relative one, or a shorter directory)",
             dir, dir_len, writer, extra, name, WC_GDAL_PATH_BUFFER,
             WC_GDAL_PATH_BUFFER - 1 - extra);
    return WC_ERR;
}

/* WC_ERR after a message naming its target when path is a symbolic link: a file replaced by a
 * rename (every output: wc_atomic_open, GDAL's through rwriter) would replace the link itself
 * and leave its target as it was. wc_check_output_path (and through it the run directory's
 * checks before training) and wc_atomic_open call it. */
static int refuse_symlink(const char *what, const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return WC_OK;
    /* the commit's rename would replace the link by a file, its target left as it was (a
     * "current.tif" link would still show the old map) */
    char target[4096];
    const ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    wc_error("refusing to write the %s to %s: it is a symbolic link (to %s), which the output "
             "would replace by a file, leaving its target as it was; give the target's path",
             what, path, target);
    return WC_ERR;
}

int wc_check_output_path(const char *what, const char *path, const char *const *inputs) {
    if (*path && wc_check_path_length(what, path) != WC_OK) return WC_EXIT_USAGE;
    return wc_check_output_path_as_is(what, path, inputs);
}

int wc_check_output_path_as_is(const char *what, const char *path, const char *const *inputs) {
    struct stat st;
    if (!*path) {
        wc_error("%s: empty path", what);
        return WC_EXIT_USAGE;
    }
    const int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        wc_error("cannot write the %s to %s: it is a directory", what, path);
        return WC_EXIT_RUNTIME;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        /* an output replaces its target by a rename: /dev/null would become a regular file */
        wc_error("refusing to write the %s to %s: it is not a regular file (a device, a pipe or "
                 "a socket), and an output replaces its target whole; give a file's path",
                 what, path);
        return WC_EXIT_USAGE;
    }
    for (int i = 0; inputs && inputs[i]; i++)
        if (wc_same_file(path, inputs[i])) {
            wc_error("refusing to write the %s to %s: that is an input (%s); choose another path",
                     what, path, inputs[i]);
            return WC_EXIT_USAGE;
        }
    if (refuse_symlink(what, path) != WC_OK) return WC_EXIT_USAGE;
    char *dir = wc_dir_of(path);
    const char *d = dir;
    int status = WC_EXIT_OK;
    const int err = stat(d, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (err) {
        /* a file where the directory should be, or above it (ENOTDIR), is there: said so */
        if (err == ENOENT)
            wc_error("cannot write the %s to %s: directory %s does not exist", what, path, d);
        else
            wc_error("cannot write the %s to %s: %s: %s", what, path, d,
                     err == ENOTDIR ? "not a directory (it, or a directory above it, is a file)"
                                    : strerror(err));
        status = WC_EXIT_RUNTIME;
    } else if (access(d, W_OK | X_OK) != 0) {
        wc_error("cannot write the %s to %s: directory %s is not writable (%s)", what, path, d,
                 strerror(errno));
        status = WC_EXIT_RUNTIME;
    } else if (access(path, F_OK) == 0 && access(path, W_OK) != 0) {
        /* rename would replace it anyway, but a read-only file is a user's way of saying no */
        wc_error("cannot write the %s to %s: the file is read-only", what, path);
        status = WC_EXIT_RUNTIME;
    }
    free(dir);
    return status;
}

/* What the first bytes of a file say it is (head: n of them). */
static wc_file_kind kind_of(const unsigned char *head, size_t n) {
    if (n >= 4 && (!memcmp(head, "II*\0", 4) || !memcmp(head, "MM\0*", 4) ||
                   !memcmp(head, "II+\0", 4) || !memcmp(head, "MM\0+", 4)))
        return WC_KIND_TIFF;
    if (n >= 8 && !memcmp(head, "\x89PNG\r\n\x1a\n", 8)) return WC_KIND_PNG;
    /* safetensors: the header's length (8 bytes, little-endian), then the header's JSON */
    if (n >= 9 && head[8] == '{' && head[6] == 0 && head[7] == 0) return WC_KIND_SAFETENSORS;
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n')) i++;
    if (i < n && (head[i] == '{' || head[i] == '[')) return WC_KIND_JSON;
    if (i < n && head[i] == '<') return WC_KIND_XML;
    return WC_KIND_OTHER;
}

static const char *kind_name(wc_file_kind kind) {
    switch (kind) {
    case WC_KIND_TIFF:
        return "a TIFF raster";
    case WC_KIND_PNG:
        return "a PNG picture";
    case WC_KIND_JSON:
        return "JSON";
    case WC_KIND_XML:
        return "XML (a VRT, a style, a sidecar)";
    case WC_KIND_SAFETENSORS:
        return "safetensors weights";
    default:
        return "a file of another kind";
    }
}

int wc_refuse_other_kind(const char *what, const char *path, wc_file_kind kind) {
    struct stat st;
    /* a regular file only: a pipe must not be read (the output checks refuse it anyway) */
    if (kind == WC_KIND_ANY || !path || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size == 0)
        return WC_EXIT_OK;
    unsigned char head[64];
    FILE *f = fopen(path, "rb");
    const size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f) fclose(f);
    const wc_file_kind is = kind_of(head, n);
    if (!f || is == kind) return WC_EXIT_OK;
    wc_error("refusing to replace %s with the %s: it holds %s, not %s; give another path (or "
             "move the file away)",
             path, what, kind_name(is), kind_name(kind));
    return WC_EXIT_USAGE;
}

int wc_check_outputs(const wc_output *outs, int n, const char *const *inputs) {
    for (int i = 0; i < n; i++) {
        if (!outs[i].path) continue;
        int status = outs[i].sidecar
                         ? wc_check_output_path_as_is(outs[i].what, outs[i].path, inputs)
                         : wc_check_output_path(outs[i].what, outs[i].path, inputs);
        if (status == WC_EXIT_OK)
            status = wc_refuse_other_kind(outs[i].what, outs[i].path, outs[i].kind);
        if (status != WC_EXIT_OK) return status;
        for (int j = 0; j < i; j++)
            if (outs[j].path && wc_same_file(outs[i].path, outs[j].path)) {
                wc_error("refusing to write the %s to %s: the %s goes there too (%s); choose "
                         "another path for one of them",
                         outs[i].what, outs[i].path, outs[j].what, outs[j].path);
                return WC_EXIT_USAGE;
            }
    }
    return WC_EXIT_OK;
}

int wc_atomic_open(wc_atomic_file *a, const char *path, const char *mode) {
    struct stat st;
    memset(a, 0, sizeof *a);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* the rename of the commit would replace a device or a pipe (/dev/null) */
        wc_error("cannot write %s: it is not a regular file, and it would be replaced whole", path);
        return WC_ERR;
    }
    if (refuse_symlink("output", path) != WC_OK) return WC_ERR;
    /* this output's working files that a killed writer left (export and synth have no signal
     * handler; SIGKILL leaves any): gone once no process may still write them, as a run
     * directory's are at its start, so they do not pile up where nothing else sweeps */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (*base && base[strlen(base) - 1] != '*') {
        char *dir = wc_dir_of(path);
        wc_temp_leftovers(dir, (const char *const[]){base, NULL}, 1, NULL);
        free(dir);
    }
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
    if (ferror(a->f))
        failed = "write", err = errno ? errno : EIO;
    else if (fflush(a->f) != 0)
        failed = "flush", err = errno;
    else if (fsync(fileno(a->f)) != 0)
        failed = "fsync", err = errno;
    if (fclose(a->f) != 0 && !failed) failed = "close", err = errno;
    a->f = NULL;
    if (!failed && rename(a->tmp, a->path) != 0) failed = "rename", err = errno;
    int rc = WC_OK;
    if (failed) {
        wc_error("writing %s failed at %s of %s: %s; the previous %s (if any) is untouched",
                 a->path, failed, a->tmp, strerror(err), a->path);
        wc_remove_working_file(AT_FDCWD, a->tmp, a->tmp);
        rc = WC_ERR;
    } else {
        rc = wc_fsync_parent(a->path);
    }
    free(a->path), free(a->tmp);
    memset(a, 0, sizeof *a);
    return rc;
}

void wc_atomic_discard(wc_atomic_file *a) {
    if (a->f) fclose(a->f);
    if (a->tmp) wc_remove_working_file(AT_FDCWD, a->tmp, a->tmp);
    free(a->path), free(a->tmp);
    memset(a, 0, sizeof *a);
}
