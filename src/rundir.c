/* rundir.c: the run directory: its files, the checks before a run, --fresh, the stop marker;
 * see rundir.h. */
#include "wildcpu/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/net.h"
#include "wildcpu/raster.h"
#include "wildcpu/riskmap.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

/* The map's companions that a run may not write (--classes, --no-style): writes_file. */
#define CLASSES       WC_RUNDIR_MAP_STEM "_classes.tif"
#define STYLE         WC_RUNDIR_MAP_STEM ".qml"
#define CLASSES_STYLE WC_RUNDIR_MAP_STEM "_classes.qml"

/* What a run directory holds: what --fresh moves aside, and what no input may be; the kind of
 * file each may replace when the run writes it (metrics.jsonl is resumed, not replaced: a
 * crash may leave NUL bytes in it, which the resume drops); `record`: the training's record of
 * itself, which only the training writes (the map's files are redrawn by predict on purpose). */
static const struct {
    const char *name, *what;
    wc_file_kind kind;
    int record;
} RUN_FILES[] = {
    {WC_CKPT_DIR, "the checkpoints", WC_KIND_ANY, 1},
    {WC_RUNDIR_METRICS_LOG, "the metrics log", WC_KIND_ANY, 1},
    {WC_RUNDIR_REPORT_JSON, "the report", WC_KIND_JSON, 1},
    {WC_RUNDIR_REPORT_MD, "the report", WC_KIND_ANY, 1},
    {WC_RUNDIR_MAP, "the risk map", WC_KIND_TIFF, 0},
    {WC_RUNDIR_MAP ".aux.xml", "the risk map's sidecar", WC_KIND_XML, 0},
    {WC_RUNDIR_PICTURE, "the quick-look picture", WC_KIND_PNG, 0},
    {CLASSES, "the class raster", WC_KIND_TIFF, 0},
    {CLASSES ".aux.xml", "the class raster's category names", WC_KIND_XML, 0},
    /* a user's (gdaladdo -ro, QGIS's Build Pyramids), never written by the run: they belong to
     * the map they were made of, which --fresh moves, and a new map removes them (rwriter.c) */
    {WC_RUNDIR_MAP ".ovr", "the risk map's external overviews", WC_KIND_ANY, 0},
    {WC_RUNDIR_MAP ".msk", "the risk map's external mask", WC_KIND_ANY, 0},
    {CLASSES ".ovr", "the class raster's external overviews", WC_KIND_ANY, 0},
    {CLASSES ".msk", "the class raster's external mask", WC_KIND_ANY, 0},
    {STYLE, "the risk map's QGIS style", WC_KIND_XML, 0},
    {CLASSES_STYLE, "the class raster's QGIS style", WC_KIND_XML, 0},
    {WC_RUNDIR_MAP_STEM ".json", "the risk map's STAC item", WC_KIND_JSON, 0},
    {WC_RUNDIR_CALIBRATION_PNG, "the reliability diagram", WC_KIND_PNG, 1},
    {"split.tif", "the training/validation split", WC_KIND_TIFF, 1},
    {WC_RUNDIR_STOPPED, "the stop marker", WC_KIND_ANY, 1},
};
enum { NRUN_FILES = (int)(sizeof RUN_FILES / sizeof RUN_FILES[0]) };

/* Whether the run file NAME is GDAL's sidecar of another: category names (.aux.xml), external
 * overviews (.ovr) or mask (.msk). */
static int is_sidecar(const char *name) {
    static const char *const ends[] = {".aux.xml", ".ovr", ".msk"};
    const size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        if (n > strlen(ends[i]) && strcmp(name + n - strlen(ends[i]), ends[i]) == 0) return 1;
    return 0;
}

static void run_file(char *buf, size_t size, const char *out, const char *name) {
    snprintf(buf, size, "%s/%s", out, name);
}

/* Every file the run reads: the tiles (a VRT and all its tiles), the labels, the oracle, a
 * network spec file, a baseline report. */
static const char **list_inputs(const wc_train_config *cfg, char **lists[3]) {
    lists[0] = wc_gdal_file_list(cfg->data.tiles);
    lists[1] = cfg->data.labels ? wc_gdal_file_list(cfg->data.labels) : NULL;
    lists[2] = cfg->data.oracle ? wc_gdal_file_list(cfg->data.oracle) : NULL;
    size_t n = 3;
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; lists[l] && lists[l][i]; i++) n++;
    const char **inputs = WC_ALLOC(sizeof(char *) * n);
    n = 0;
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; lists[l] && lists[l][i]; i++) inputs[n++] = lists[l][i];
    if (!wc_net_builtin_spec(cfg->model)) inputs[n++] = cfg->model;
    if (cfg->baseline) inputs[n++] = cfg->baseline;
    inputs[n] = NULL;
    return inputs;
}

/* Nothing the run writes or moves may be one of its inputs (a --tiles D/risk.tif with --out D
 * would be replaced by the map, or moved aside by --fresh). */
static int check_inputs(const wc_train_config *cfg) {
    char **lists[3];
    const char **inputs = list_inputs(cfg, lists);
    char paths[NRUN_FILES][4200];
    const char *outs[NRUN_FILES], *whats[NRUN_FILES], *moved[1] = {paths[0]}; /* checkpoints */
    size_t longest = 0;
    int longest_file = 0;
    for (int i = 0; i < NRUN_FILES; i++) {
        run_file(paths[i], sizeof paths[i], cfg->out_dir, RUN_FILES[i].name);
        outs[i] = paths[i], whats[i] = RUN_FILES[i].what;
        /* a sidecar (NAME.aux.xml, .ovr, .msk) has no temporary name: its file's is longer */
        const size_t n = is_sidecar(RUN_FILES[i].name) ? 0 : wc_path_derived_length(paths[i]);
        if (n > longest) longest = n, longest_file = i;
    }
    /* the map at the end of the run goes through GDAL: its path must fit GDAL's buffers */
    int rc = wc_check_dir_length("the run", cfg->out_dir, longest, RUN_FILES[longest_file].name);
    /* a linked checkpoints directory stays where it is (set_aside_linked_checkpoints) */
    struct stat st;
    const int moves = cfg->fresh && !(lstat(paths[0], &st) == 0 && S_ISLNK(st.st_mode));
    if (rc == WC_OK)
        rc = wc_check_outputs_not_inputs(outs, whats, NRUN_FILES, moved, moves, inputs);
    free(inputs);
    for (int l = 0; l < 3; l++) wc_strv_free(lists[l]);
    return rc;
}

/* Whether path is a directory with nothing in it but its lock and, if named, the entry `also`. */
static int holds_only_lock(const char *path, const char *also) {
    DIR *d = opendir(path);
    if (!d) return 0;
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d)) != NULL;)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                strcmp(e->d_name, WC_RUNDIR_LOCK) == 0 || (also && strcmp(e->d_name, also) == 0);
    closedir(d);
    return empty;
}

/* Whether path is a directory with nothing in it but its lock (what a run that failed before
 * its first checkpoint leaves as DIR/checkpoints: nothing to keep). */
static int is_empty_dir(const char *path) {
    return holds_only_lock(path, NULL);
}

/* A failed move of --fresh: the error, and where what did move went. A replaced-* directory
 * left empty is removed (it would only hide the one that holds the last real run); one that
 * holds part of the run is named with what it holds, so that the user finds those files. */
static void report_failed_move(const char *from, const char *to, int err, const char *dir,
                               const int *moved_files, int moved, const char *linked,
                               int linked_moved) {
    wc_error("--fresh: cannot move %s to %s: %s", from, to, strerror(err));
    /* the checkpoints moved first, through a link, into a replaced-* of their own directory */
    if (linked_moved > 0)
        wc_error("--fresh: %d of the previous run's checkpoint files had moved to %s before "
                 "that: move them back, or move the rest of the run aside yourself",
                 linked_moved, linked);
    if (moved == 0) {
        if (rmdir(dir) != 0 && errno != ENOENT && errno != ENOTEMPTY)
            wc_warn("--fresh: cannot remove the empty %s: %s", dir, strerror(errno));
        if (linked_moved == 0)
            wc_error("--fresh: nothing was moved; the previous run's files are where they were");
        return;
    }
    char names[1024] = "";
    size_t len = 0;
    for (int i = 0; i < NRUN_FILES && len < sizeof names; i++)
        if (moved_files[i])
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                    RUN_FILES[i].name);
    wc_error("--fresh: %d of the previous run's files had moved to %s before that (%s); the "
             "others are still in place: move them back, or move the rest there yourself",
             moved, dir, names);
}

/* What a run writes into its checkpoints directory: ckpt-*.wcp (and those kept aside as
 * ckpt-*.wcp.unusable), best.wcp, and their temporaries (.ckpt-*). */
static int is_checkpoint_file(const struct dirent *e) {
    const char *name = e->d_name;
    return strncmp(name, "ckpt-", 5) == 0 || strncmp(name, ".ckpt-", 6) == 0 ||
           strncmp(name, WC_CKPT_BEST, strlen(WC_CKPT_BEST)) == 0;
}

/* --fresh with DIR/checkpoints a link to a directory (on scratch): moving the link aside would
 * make the new run write its checkpoints on DIR's own file system. The link stays, and the
 * previous run's checkpoint files move to aside/ inside the linked directory (a rename does not
 * cross file systems); nothing else there moves (the directory may hold more than this run's
 * files, the run directory itself when the link is "."). Returns how many moved, or -1 after a
 * message. */
static int set_aside_linked_checkpoints(const char *ckpt_dir, const char *aside) {
    struct dirent **names;
    const int n = scandir(ckpt_dir, &names, is_checkpoint_file, alphasort);
    if (n < 0) {
        wc_error("--fresh: cannot list %s: %s", ckpt_dir, strerror(errno));
        return -1;
    }
    int moved = 0;
    for (int i = 0; i < n && moved >= 0; i++) {
        char from[4700], to[4700];
        snprintf(from, sizeof from, "%s/%s", ckpt_dir, names[i]->d_name);
        snprintf(to, sizeof to, "%s/%s", aside, names[i]->d_name);
        if (moved == 0 && mkdir(aside, 0777) != 0 && errno != EEXIST) {
            wc_error("--fresh: cannot create %s to keep the previous run's checkpoints: %s", aside,
                     strerror(errno));
            moved = -1;
        } else if (rename(from, to) != 0) {
            wc_error("--fresh: cannot move %s to %s: %s", from, to, strerror(errno));
            if (moved > 0)
                wc_error("--fresh: %d of the previous run's checkpoint files had moved to %s "
                         "before that; the others are still in place: move them back, or move "
                         "the rest there yourself",
                         moved, aside);
            else if (rmdir(aside) == 0 || errno == ENOENT || errno == ENOTEMPTY)
                wc_error("--fresh: nothing was moved; the previous run's files are where they "
                         "were");
            else
                wc_error("--fresh: nothing was moved, but the empty %s could not be removed "
                         "(%s); the previous run's files are where they were",
                         aside, strerror(errno));
            moved = -1;
        } else {
            moved++;
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return moved;
}

/* --fresh: the previous run's files move to out/replaced-<time>/ (never deleted), so a later
 * resume cannot pick up the old run's checkpoints. An empty checkpoints directory stays (a
 * replaced-* directory of nothing would only hide the one that holds the last real run); a
 * checkpoints link to a directory stays too, its checkpoints moving to a replaced-<time>/ of
 * the same name inside it (set_aside_linked_checkpoints). Returns WC_ERR on a failed move
 * (report_failed_move). */
static int set_aside_previous_run(const char *out) {
    char ts[32], name[64], dir[4096], linked[4300], from[4200], to[4400];
    wc_utc_timestamp(ts, sizeof ts);
    snprintf(name, sizeof name, "replaced-%s", ts);
    /* two restarts within a second; the name is free beside the checkpoints too */
    for (int k = 2;; k++) {
        snprintf(dir, sizeof dir, "%s/%s", out, name);
        snprintf(linked, sizeof linked, "%s/" WC_CKPT_DIR "/%s", out, name);
        if (access(dir, F_OK) != 0 && access(linked, F_OK) != 0) break;
        snprintf(name, sizeof name, "replaced-%s-%d", ts, k);
    }
    int moved = 0, moved_files[NRUN_FILES] = {0}, linked_moved = 0;
    for (int i = 0; i < NRUN_FILES; i++) {
        run_file(from, sizeof from, out, RUN_FILES[i].name);
        struct stat st, target; /* lstat: a link moves as it is, also one whose target is gone */
        if (lstat(from, &st) != 0) continue;
        if (strcmp(RUN_FILES[i].name, WC_CKPT_DIR) == 0 && S_ISLNK(st.st_mode) &&
            stat(from, &target) == 0 && S_ISDIR(target.st_mode)) {
            /* the first of RUN_FILES: on a failure, nothing else has moved */
            const int n = set_aside_linked_checkpoints(from, linked);
            if (n < 0) return WC_ERR;
            linked_moved = n;
            if (n > 0)
                wc_info("--fresh: the previous run's checkpoints are kept in %s (the link %s "
                        "stays)",
                        linked, from);
            continue;
        }
        if (is_empty_dir(from)) continue;
        if (!moved && mkdir(dir, 0777) != 0 && errno != EEXIST) {
            wc_error("--fresh: cannot create %s to keep the previous run: %s", dir,
                     strerror(errno));
            return WC_ERR;
        }
        snprintf(to, sizeof to, "%s/%s", dir, RUN_FILES[i].name);
        if (rename(from, to) != 0) {
            report_failed_move(from, to, errno, dir, moved_files, moved, linked, linked_moved);
            return WC_ERR;
        }
        moved_files[i] = 1;
        moved++;
    }
    if (moved) wc_info("--fresh: the previous run's files are kept in %s", dir);
    return WC_OK;
}

/* The locks of the run directory and of its checkpoints' directory, held by rank 0 from the
 * checks to the process's end (the kernel releases them however the process ends, also on
 * SIGKILL). Closed only when --fresh has moved the checkpoints directory aside, for the new
 * one's. */
static int lock_fd = -1, ckpt_lock_fd = -1;

/* Notes this process in the lock file fd (path): "pid N on HOST since T", then `note`; not in
 * another user's lock, open for reading only (flock needs no write access). */
static void note_holder(int fd, const char *path, const char *note) {
    if ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY) return;
    char host[256] = "", ts[32], line[4608];
    gethostname(host, sizeof host - 1);
    wc_utc_timestamp(ts, sizeof ts);
    int len = snprintf(line, sizeof line, "pid %ld on %s since %s%s\n", (long)getpid(),
                       *host ? host : "?", ts, note);
    if (len >= (int)sizeof line) len = (int)sizeof line - 1;
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len)
        wc_warn("cannot note this run in %s: %s", path, strerror(errno)); /* the lock holds */
}

/* Takes DIR/WC_RUNDIR_LOCK, so that a second run into the directory (a job submitted twice, a
 * rerun while the first still draws its map) is refused before it touches anything: two runs
 * would delete each other's checkpoint writes, mix checkpoints and best.wcp of different
 * models, and swap metrics.jsonl under each other. The file holds the holder's pid, host and
 * start, for the message. On a file system without locks (flock fails otherwise than "held"),
 * a warning; one whose locks are local to a node (Lustre's localflock) cannot see a run on
 * another node. A node that died holding the lock on NFSv4 holds it until its lease expires
 * (90 s by default), before Slurm declares the node down (SlurmdTimeout, 300 s) and requeues;
 * on NFSv3 until it reboots: the message says to remove the file when its host is down.
 * With `quiet`, a directory that cannot take the file (read-only, no room) is left to the
 * caller's own check, which says why no run can use it. The lock is noted (`note` after the
 * holder) unless note is NULL: the caller then notes it once its own checks pass. */
static int lock_dir(const char *dir, const char *what, const char *note, int *held, int quiet) {
    char path[4200];
    run_file(path, sizeof path, dir, WC_RUNDIR_LOCK);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    /* another user's lock (a group's scratch directory) is still a lock: flock needs no
     * write access */
    if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS)) {
        const int create_errno = errno;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        /* none there to share: why it cannot be made is the reason (a read-only file system,
         * not "No such file") */
        if (fd < 0 && errno == ENOENT) errno = create_errno;
    }
    /* no lock file can be made (the write check that follows says why) */
    if (fd < 0 && quiet &&
        (errno == ENOENT || errno == EROFS || errno == EACCES || errno == EPERM ||
         errno == ENOSPC || errno == EDQUOT))
        return WC_OK;
    if (fd < 0) {
        wc_error("cannot open the run directory's lock %s: %s", path, strerror(errno));
        return WC_ERR;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            char holder[256] = "";
            ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
            holder[n > 0 ? n : 0] = '\0';
            holder[strcspn(holder, "\n")] = '\0';
            wc_error("%s%s is in use by another wildcpu run (%s); wait for it to end, or give "
                     "this run another --out (if that host is down, its lock can outlive it on "
                     "a network file system: remove %s)",
                     dir, what, *holder ? holder : "its pid unknown", path);
            close(fd);
            return WC_ERR;
        }
        wc_warn("cannot lock %s (%s): a second run into this directory at the same time would "
                "not be noticed",
                path, strerror(errno));
        close(fd);
        return WC_OK;
    }
    if (note) note_holder(fd, path, note);
    *held = fd;
    return WC_OK;
}

/* The run directory that last trained into the checkpoints directory `real` (its lock notes it
 * after " for "), into owner (size bytes); "" when none is noted (a lock of an older version). */
#define OWNER_NOTE " for "
static void noted_owner(const char *real, char *owner, size_t size) {
    char path[4300], line[4608] = "";
    run_file(path, sizeof path, real, WC_RUNDIR_LOCK);
    owner[0] = '\0';
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;
    const ssize_t n = pread(fd, line, sizeof line - 1, 0);
    close(fd);
    line[n > 0 ? n : 0] = '\0';
    line[strcspn(line, "\n")] = '\0';
    const char *at = strstr(line, OWNER_NOTE);
    if (at) snprintf(owner, size, "%s", at + strlen(OWNER_NOTE));
}

/* Whether the checkpoints directory `ck` (stat) is another existing run directory's, `owner`,
 * the run that last trained into it: its own checkpoints (a directory or a link) still lead
 * there. A copy of a run directory whose checkpoints are a link (cp -a copies the link) shares
 * them with the original: the copy would resume from the original's checkpoints, write its own
 * among them, and with --fresh move the original's aside, leaving the original to fail on its
 * next rerun ("written with other settings"). A run directory moved away (mv) leaves no owner. */
static int owned_by_other(const char *owner, const char *out, const struct stat *ck) {
    struct stat out_st, owner_st, owner_ck;
    char owner_ckpt[4300];
    if (!*owner || stat(owner, &owner_st) != 0 || !S_ISDIR(owner_st.st_mode)) return 0;
    if (stat(out, &out_st) == 0 && out_st.st_dev == owner_st.st_dev &&
        out_st.st_ino == owner_st.st_ino)
        return 0; /* this directory, by another name */
    run_file(owner_ckpt, sizeof owner_ckpt, owner, WC_CKPT_DIR);
    return stat(owner_ckpt, &owner_ck) == 0 && owner_ck.st_dev == ck->st_dev &&
           owner_ck.st_ino == ck->st_ino;
}

/* DIR/checkpoints may be a link to a directory elsewhere (docs/cli.md): to a scratch directory
 * that another run directory's checkpoints link to as well, or to another run directory's own
 * DIR2/checkpoints. Two runs would prune and replace each other's checkpoints, and each map the
 * other's best.wcp, and DIR's lock does not see it: every run locks its checkpoints directory,
 * link or not, by its own .lock (a lock is the file's, whatever path reaches it), so that the
 * two meet there. A checkpoints directory that is DIR itself (a link to ".") has DIR's lock:
 * a second lock of the same file would refuse this run as another one. The lock also notes
 * the run directory that trains into it, which a copy of that directory is refused by
 * (owned_by_other). */
static int lock_checkpoints_dir(const char *out, const char *ckpt_dir) {
    struct stat st, out_st, link_st;
    if (ckpt_lock_fd >= 0 || stat(ckpt_dir, &st) != 0 || !S_ISDIR(st.st_mode)) return WC_OK;
    if (stat(out, &out_st) == 0 && st.st_dev == out_st.st_dev && st.st_ino == out_st.st_ino)
        return WC_OK;
    char *real = realpath(ckpt_dir, NULL), *out_real = realpath(out, NULL), what[4400];
    const char *lock_at = real ? real : ckpt_dir;
    if (lstat(ckpt_dir, &link_st) == 0 && S_ISLNK(link_st.st_mode))
        snprintf(what, sizeof what, " (the checkpoints of %s, through the link %s)", out, ckpt_dir);
    else /* held while DIR's lock is this run's: by a run whose checkpoints link here */
        snprintf(what, sizeof what,
                 " (the checkpoints of %s, which another run directory's checkpoints link to)",
                 out);
    char owner[4200], note[4300] = "";
    noted_owner(lock_at, owner, sizeof owner);
    if (out_real) snprintf(note, sizeof note, OWNER_NOTE "%s", out_real);
    /* the lock first (a run holding it is said to be running), noted only once the owner is
     * not another run directory (a refused run must not become the owner) */
    int rc = lock_dir(lock_at, what, NULL, &ckpt_lock_fd, 1);
    if (rc == WC_OK && owned_by_other(owner, out, &st)) {
        wc_error("%s%s holds the checkpoints of the run directory %s, whose own checkpoints "
                 "lead there too (a copy of a run directory copies the link, not the "
                 "checkpoints): this run would resume from that run's checkpoints and write its "
                 "own among them; give %s a checkpoints directory of its own (remove the link "
                 "%s; to start from %s's checkpoints, copy them: cp -r %s/. %s after making it), "
                 "or remove %s if it is an old copy",
                 lock_at, what, owner, out, ckpt_dir, owner, lock_at, ckpt_dir, owner);
        if (ckpt_lock_fd >= 0) close(ckpt_lock_fd);
        ckpt_lock_fd = -1;
        rc = WC_ERR;
    } else if (rc == WC_OK && ckpt_lock_fd >= 0) {
        char path[4300];
        run_file(path, sizeof path, lock_at, WC_RUNDIR_LOCK);
        note_holder(ckpt_lock_fd, path, note);
    }
    free(real);
    free(out_real);
    return rc;
}

const char *wc_rundir_record_of(const char *path) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *what = NULL;
    for (int i = 0; i < NRUN_FILES && !what; i++)
        if (RUN_FILES[i].record && strcmp(base, RUN_FILES[i].name) == 0) what = RUN_FILES[i].what;
    if (!what) return NULL;
    /* a training has run there: it leaves its lock, which no run removes, beside its
     * checkpoints (a checkpoints directory has a lock of its own, and is no run directory) */
    char *dir = wc_dir_of(path), lock[4300], ckpt[4300];
    run_file(lock, sizeof lock, dir, WC_RUNDIR_LOCK);
    run_file(ckpt, sizeof ckpt, dir, WC_CKPT_DIR);
    free(dir);
    struct stat st, ck;
    return lstat(lock, &st) == 0 && S_ISREG(st.st_mode) && lstat(ckpt, &ck) == 0 ? what : NULL;
}

int wc_rundir_taken_by_live_run(const char *path, char *holder, size_t size) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    int named = 0;
    for (int i = 0; i < NRUN_FILES && !named; i++) named = strcmp(base, RUN_FILES[i].name) == 0;
    if (!named) return 0;
    char *dir = wc_dir_of(path);
    const int live = wc_rundir_lock_held(dir, holder, size);
    free(dir);
    return live;
}

int wc_rundir_lock_held(const char *dir, char *holder, size_t size) {
    char lock[4300];
    run_file(lock, sizeof lock, dir, WC_RUNDIR_LOCK);
    /* only looked at: never created, and held (shared) for no longer than the test */
    const int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return 0;
    struct stat st, mine;
    int live = 0;
    const int own = fstat(fd, &st) == 0 && lock_fd >= 0 && fstat(lock_fd, &mine) == 0 &&
                    st.st_dev == mine.st_dev && st.st_ino == mine.st_ino;
    if (!own && flock(fd, LOCK_SH | LOCK_NB) != 0)
        live = errno == EWOULDBLOCK;
    else if (!own)
        flock(fd, LOCK_UN);
    if (live) {
        ssize_t n = pread(fd, holder, size - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
    }
    close(fd);
    return live;
}

void wc_rundir_say_if_training(const char *path) {
    struct stat st;
    char ckpt_dir[4200], best[4300], holder[256] = "";
    if (wc_dist_rank() != 0 || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return;
    /* quietly: the load said what was wrong with the directory */
    if (wc_ckpt_dir_quietly(path, ckpt_dir, sizeof ckpt_dir) != WC_OK) return;
    if (!wc_rundir_lock_held(path, holder, sizeof holder) &&
        !wc_rundir_lock_held(ckpt_dir, holder, sizeof holder))
        return;
    /* a checkpoint there that did not load failed for its own reasons, said already */
    wc_ckpt_entry *e;
    const int n = wc_ckpt_list(ckpt_dir, 0, &e);
    if (n > 0) wc_ckpt_list_free(e, n);
    snprintf(best, sizeof best, "%s/%s", ckpt_dir, WC_CKPT_BEST);
    if (n != 0 || access(best, F_OK) == 0) return;
    wc_error("%s: a training is running there (%s) and has not written its first checkpoint yet: "
             "wait for it (--ckpt-every, --ckpt-minutes, or a validation), or give --checkpoint "
             "another run's",
             path, holder);
}

/* Whether this run (re)writes the run file NAME as a file, replacing it by a rename: not the
 * checkpoints directory (which may well be a link to a scratch file system), nor the map's
 * files when it draws no map, or not that one (--classes, --no-style). */
static int writes_file(const wc_train_config *cfg, const char *name) {
    if (strcmp(name, WC_CKPT_DIR) == 0) return 0;
    if (is_sidecar(name) && !strstr(name, ".aux.xml")) return 0; /* the user's .ovr, .msk */
    if (strncmp(name, WC_RUNDIR_MAP_STEM, strlen(WC_RUNDIR_MAP_STEM)) != 0) return 1;
    if (cfg->no_predict) return 0;
    if (strncmp(name, CLASSES, strlen(CLASSES)) == 0) return cfg->classes;
    if (strcmp(name, STYLE) == 0) return !cfg->no_style;
    if (strcmp(name, CLASSES_STYLE) == 0) return cfg->classes && !cfg->no_style;
    return 1;
}

/* The shallowest directory of path that does not exist (path itself, or one of its parents),
 * or NULL when path exists: what wc_mkdir_p is about to create, and what a run refused before
 * it wrote anything takes away again (wc_rundir_forget_refused). */
static char *made_dir;

static char *first_missing(const char *path) {
    struct stat st;
    if (lstat(path, &st) == 0) return NULL;
    char *p = wc_strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        const int exists = lstat(p, &st) == 0;
        *s = '/';
        if (!exists) {
            *s = '\0';
            return p;
        }
    }
    return p;
}

/* Rank 0's part of wc_rundir_prepare. */
static int prepare_here(const wc_train_config *cfg) {
    const char *out = cfg->out_dir;
    if (check_inputs(cfg) != WC_OK) return WC_EXIT_USAGE;
    char ckpt_dir[4200], marker[4200];
    run_file(ckpt_dir, sizeof ckpt_dir, out, WC_CKPT_DIR);
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
        wc_error("--out %s exists and is not a directory: give the run a directory", out);
        return WC_EXIT_RUNTIME;
    }
    free(made_dir);
    made_dir = first_missing(out);
    if (wc_mkdir_p(out) != WC_OK) {
        wc_error("cannot create the run directory %s: %s", out, strerror(errno));
        return WC_EXIT_RUNTIME;
    }
    /* before --fresh moves anything (wc_rundir_set_aside): the files may be another running
     * run's */
    if (lock_fd < 0 && lock_dir(out, "", "", &lock_fd, 0) != WC_OK) return WC_EXIT_RUNTIME;
    /* found now, not after hours of training: an output the run could not replace at its
     * first report, at the split or at the map (a symbolic link, a directory, a pipe, a
     * read-only file, a file of another kind), a file named like the map's companions that is
     * not wildcpu's and that the map would replace (--fresh moves them all aside instead) */
    for (int i = 0; !cfg->fresh && i < NRUN_FILES; i++) {
        if (!writes_file(cfg, RUN_FILES[i].name)) continue;
        char path[4200];
        run_file(path, sizeof path, out, RUN_FILES[i].name);
        const char *what = RUN_FILES[i].what + 4 /* "the " */;
        int status = wc_check_output_path_as_is(what, path, NULL);
        if (status == WC_EXIT_OK) status = wc_refuse_other_kind(what, path, RUN_FILES[i].kind);
        if (status != WC_EXIT_OK) return status;
    }
    /* best.wcp too, which every validation with a better AUC-PR replaces by a rename (the
     * other checkpoints get new names): a directory there failed each of those writes with a
     * warning, and the map came from another checkpoint than the best; a link was replaced by
     * a file, its target left as it was */
    char best[4300];
    snprintf(best, sizeof best, "%s/%s", ckpt_dir, WC_CKPT_BEST);
    if (!cfg->fresh && lstat(best, &st) == 0) {
        const int status = wc_check_output_path_as_is("best validation's checkpoint", best, NULL);
        if (status != WC_EXIT_OK) return status;
    }
    if (!cfg->no_predict && !cfg->fresh) {
        char map[4200], picture[4200];
        run_file(map, sizeof map, out, WC_RUNDIR_MAP);
        run_file(picture, sizeof picture, out, WC_RUNDIR_PICTURE);
        const wc_predict_config pc = {.out = map,
                                      .png = picture,
                                      .classes = cfg->classes,
                                      .no_style = cfg->no_style,
                                      .run_map = 1};
        wc_riskmap_paths p;
        wc_riskmap_paths_of(map, &p);
        const int clash = wc_riskmap_check_companions(&pc, &p) != WC_OK;
        wc_riskmap_paths_free(&p);
        if (clash) return WC_EXIT_RUNTIME;
    }
    /* the directory is this run's now: what a killed run of it left half-written goes (files
     * of its own names only, none that a live process may be writing: a predict into DIR) */
    const char *own[NRUN_FILES + 2];
    for (int i = 0; i < NRUN_FILES; i++) own[i] = RUN_FILES[i].name;
    own[NRUN_FILES] = "labels-*", own[NRUN_FILES + 1] = NULL;
    wc_temp_leftovers(out, own, 1, NULL);
    /* a predict or evaluate --map writing DIR/risk.tif now would have this run's map refused
     * at its end, hours in: said before the first step */
    char map[4200];
    run_file(map, sizeof map, out, WC_RUNDIR_MAP);
    const long writer = cfg->no_predict ? 0 : wc_output_writer(map);
    if (writer) {
        wc_error("%s/" WC_RUNDIR_MAP " is being written by wildcpu process %ld on this host (a "
                 "predict or evaluate --map into the run directory): the map at the end of this "
                 "run would be refused; wait for it to end, or train with --no-predict",
                 out, writer);
        return WC_EXIT_RUNTIME;
    }
    char held[4200]; /* a file there, or a link to a file system that is not mounted */
    if (mkdir(ckpt_dir, 0777) != 0 && errno != EEXIST) {
        wc_error("cannot create %s: %s", ckpt_dir, strerror(errno));
        return WC_EXIT_RUNTIME;
    }
    if (wc_ckpt_dir_of(out, held, sizeof held) != WC_OK) return WC_EXIT_RUNTIME;
    /* once it exists (a first run makes it just above); before anything is written there */
    if (lock_checkpoints_dir(out, ckpt_dir) != WC_OK) return WC_EXIT_RUNTIME;
    /* Found now, not after hours of training whose every checkpoint fails: a checkpoints
     * directory that cannot take a file (read-only, not a directory, no inodes left). */
    char probe[4300];
    snprintf(probe, sizeof probe, "%s/.write-test-%ld", ckpt_dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        wc_error("cannot write checkpoints into %s: %s", ckpt_dir, strerror(errno));
        return WC_EXIT_RUNTIME;
    }
    close(fd);
    unlink(probe);
    /* the marker tells how the last run ended: this one has not ended yet. With --fresh it
     * moves aside with the rest of that run (or stays, when this one cannot start) */
    run_file(marker, sizeof marker, out, WC_RUNDIR_STOPPED);
    if (!cfg->fresh && unlink(marker) != 0 && errno != ENOENT)
        wc_warn("cannot remove %s: %s", marker, strerror(errno));
    return WC_OK;
}

void wc_rundir_forget_refused(const wc_train_config *cfg) {
    if (wc_dist_rank() != 0 || !made_dir) return;
    char ckpt_dir[4200], lock[4300];
    run_file(ckpt_dir, sizeof ckpt_dir, cfg->out_dir, WC_CKPT_DIR);
    if (!is_empty_dir(ckpt_dir) || !holds_only_lock(cfg->out_dir, WC_CKPT_DIR)) return;
    run_file(lock, sizeof lock, ckpt_dir, WC_RUNDIR_LOCK);
    unlink(lock);
    rmdir(ckpt_dir);
    run_file(lock, sizeof lock, cfg->out_dir, WC_RUNDIR_LOCK);
    unlink(lock);
    /* DIR, then each parent the run made, up to the first that existed before it */
    char *dir = wc_strdup(cfg->out_dir);
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--) dir[n - 1] = '\0';
    while (rmdir(dir) == 0 && strcmp(dir, made_dir) != 0) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) break;
        *slash = '\0';
    }
    free(dir);
    free(made_dir);
    made_dir = NULL;
}

int wc_rundir_set_aside(const wc_train_config *cfg) {
    int failed = 0;
    if (cfg->fresh && wc_dist_rank() == 0) {
        char ckpt_dir[4200];
        run_file(ckpt_dir, sizeof ckpt_dir, cfg->out_dir, WC_CKPT_DIR);
        failed = set_aside_previous_run(cfg->out_dir) != WC_OK;
        if (!failed && mkdir(ckpt_dir, 0777) != 0 && errno != EEXIST) {
            wc_error("cannot create %s: %s", ckpt_dir, strerror(errno));
            failed = 1;
        }
        /* a checkpoints directory moved aside took its lock along: the new one is locked */
        char lock[4300];
        struct stat now, held;
        run_file(lock, sizeof lock, ckpt_dir, WC_RUNDIR_LOCK);
        if (!failed && ckpt_lock_fd >= 0 && fstat(ckpt_lock_fd, &held) == 0 &&
            !(stat(lock, &now) == 0 && now.st_dev == held.st_dev && now.st_ino == held.st_ino)) {
            close(ckpt_lock_fd);
            ckpt_lock_fd = -1;
            failed = lock_checkpoints_dir(cfg->out_dir, ckpt_dir) != WC_OK;
        }
    }
    return wc_dist_any(failed) ? WC_ERR : WC_OK;
}

int wc_rundir_prepare(const wc_train_config *cfg) {
    int64_t status = wc_dist_rank() == 0 ? prepare_here(cfg) : WC_OK;
    wc_dist_bcast(&status, sizeof status, 0);
    return (int)status;
}

const char *wc_rundir_rerun(const wc_train_config *cfg, const char *phase) {
    return cfg->fresh && strcmp(phase, "planning") != 0 ? "rerun the same command without --fresh"
                                                        : "rerun the same command";
}

long wc_rundir_newest_step(const wc_train_config *cfg) {
    char dir[4200];
    run_file(dir, sizeof dir, cfg->out_dir, WC_CKPT_DIR);
    long step = -1;
    wc_ckpt_entry *e;
    int n = wc_ckpt_list(dir, 0, &e);
    if (n < 0) return -2;
    for (int i = 0; i < n && step < 0; i++)
        if (e[i].header_ok) step = e[i].step;
    if (n > 0) wc_ckpt_list_free(e, n);
    return step;
}

void wc_rundir_mark_stopped(const wc_train_config *cfg, const char *phase) {
    if (wc_dist_rank() != 0) return;
    const char *out_dir = cfg->out_dir;
    char path[4200], ts[32];
    run_file(path, sizeof path, out_dir, WC_RUNDIR_STOPPED);
    /* the step a rerun resumes from: none for a --fresh run stopped in planning, whose rerun
     * (the same command, --fresh and all) starts over, whatever checkpoints of the run it sets
     * aside are still there */
    long step = -1;
    if (!(cfg->fresh && strcmp(phase, "planning") == 0))
        step = WC_MAX(wc_rundir_newest_step(cfg), -1);
    wc_utc_timestamp(ts, sizeof ts);
    wc_atomic_file f;
    if (wc_atomic_open(&f, path, "w") != WC_OK) return;
    char origin[96];
    fprintf(f.f, "stopped_utc=%s;phase=%s;step=%ld;signal=%s;resume=%s\n", ts, phase, step,
            wc_stop_origin(origin, sizeof origin, "on another rank"), wc_rundir_rerun(cfg, phase));
    if (wc_atomic_commit(&f) != WC_OK)
        wc_warn("%s could not be written: scripts cannot tell this stop from a failure by it",
                path);
}
