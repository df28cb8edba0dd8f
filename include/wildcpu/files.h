/* files.h: whole-file reads, atomic replacement of small output files, and the checks that an
 * output path can be written and is none of the inputs.
 *
 * Every output a user keeps (a report, metrics, an exported model, a picture, a map) replaces
 * the previous one only when complete: it is written to a temporary file in the same
 * directory, flushed, fsync'ed, closed, renamed over the target, and the directory is
 * fsync'ed. A failure at any of these calls is reported, naming the call and the file, and
 * removes the temporary file: the previous version stays as it was. Checkpoints follow the
 * same protocol with their own crash-test hooks (ckpt.c); rasters are written through GDAL by
 * the raster writer (rwriter.h), which uses the fsync and temporary-name helpers. */
#ifndef WILDCPU_FILES_H
#define WILDCPU_FILES_H

#include <stdio.h>

/* A text file a user names (a network spec, a baseline report), whole: a regular file of at most
 * max bytes, NUL-terminated (caller frees). NULL with why set ("it is a directory", "it is not a
 * regular file ...", its size against max, a NUL byte inside it, the system's error) and errno
 * (ENOENT: no such file; see wc_open_regular for the others): a pipe or a device is refused
 * rather than waited on, a huge file rather than read into memory, and a NUL byte rather than
 * taken for the end of the text. */
char *wc_read_file_limited(const char *path, size_t max, char *why, size_t why_size);
/* The same checks without the read: a descriptor open for reading (O_NONBLOCK, which a regular
 * file ignores) on a regular file of at most max bytes, for a reader that goes through a file
 * line by line; -1 with why set and errno ENOENT (no such file), EISDIR, EINVAL (a pipe, a
 * device, a socket), EFBIG (larger than max) or the system's error. Every file wildcpu reads
 * whole goes through one of the two: there is no unbounded, blocking read. */
int wc_open_regular(const char *path, size_t max, char *why, size_t why_size);

/* The local file a GDAL dataset name reads, when the name is not itself a file: inside an
 * archive path (/vsizip/a.zip/x.vrt, /vsitar/, /vsigzip/, /vsi7z/, /vsirar/) its first prefix
 * that exists and is no directory (a.zip); in a driver's connection string (GPKG:f.gpkg:table,
 * NETCDF:"f.nc":var, GTIFF_DIR:1:f.tif) the first ':'-separated part, quotes stripped, that
 * exists and is no directory. Returns 1 with the file at name + *at, *len bytes long; 0 when
 * the name is a file itself, or nothing local lies behind it (/vsicurl/, PG:..., a file that
 * does not exist). Only a name that does not exist as given costs more than one stat. */
int wc_file_behind(const char *name, size_t *at, size_t *len);
/* The same as a string (caller frees), or NULL. */
char *wc_file_behind_dup(const char *name);
/* Whether name is one only GDAL resolves, not a path: a virtual file system's (/vsi...) or a
 * driver's connection string (DRIVER:..., which a file name holding ':' may look like too). */
int wc_gdal_name(const char *name);

/* "a pipe (FIFO)", "a device", "a socket" or "standard input" (GDAL's /vsistdin/) when path is
 * one, or names one through an archive path or a connection string (wc_file_behind), else NULL
 * (a regular file, a directory, or a path that does not exist or that only GDAL knows). GDAL
 * would open such an input and wait on it, or read it without end. */
const char *wc_special_file_kind(const char *path);

/* path made absolute against the working directory, for records read elsewhere (a map's
 * provenance): the file within an archive path or a connection string is made absolute in
 * place (GPKG:d/f.gpkg:t gives GPKG:/cwd/d/f.gpkg:t); a URL, or a GDAL name (wc_gdal_name)
 * with no local file behind it, is as given; "./" at the start goes. Links are not resolved.
 * Into out (size bytes), cut when longer. */
void wc_path_absolute(const char *path, char *out, size_t size);
/* WC_ERR after a message ("WHAT PATH is a pipe (FIFO), not a file GDAL can read ...") when path
 * is one of those, else WC_OK: for an input about to be given to GDAL. */
int wc_refuse_special_file(const char *what, const char *path);

/* A temporary name next to path, unique to this process: DIR/.NAME.TAG-PID. Caller frees. */
char *wc_temp_path(const char *path, const char *tag);
/* The working files a killed process left in dir (SIGKILL, the OOM killer: no handler runs):
 * wc_temp_path's DIR/.NAME.tmp-PID and DIR/.NAME.out-PID, and GDAL's .aux.xml of them, for NAME
 * among `names` (NULL-terminated; "x*" is a prefix), never this process's. With `remove`, each
 * that no process may still be writing (PID alive on this host, or changed within the last 10
 * minutes: a process on another node) is deleted and said; else all are listed in one warning
 * (each once per process: a training checks its map's name before its first step and again when
 * it claims the map), except, when live_writer is given, one a wildcpu process alive on this
 * host is writing: its pid goes to *live_writer (0: none), for the caller to refuse a second
 * writer of the same files. Returns how many were removed or found (a file said before in this
 * process is counted, not said again). */
int wc_temp_leftovers(const char *dir, const char *const *names, int remove, long *live_writer);

/* wc_temp_leftovers(dir of path, its name, 0, &writer): the pid of a live wildcpu on this host
 * writing path (0: none), the working files of killed runs beside it said in a warning. */
long wc_output_writer(const char *path);
/* wc_output_writer(path), and when none, this process's claim on path: its working file
 * wc_temp_path(path, "tmp"), created empty (the writer that follows takes its name over).
 * Checking for another writer and then creating leaves a moment in which two processes both
 * find none and both write, the later replacing the earlier's file under the other's
 * companions; so both are done under an flock of path's directory, and of two that start
 * together exactly one claims and the other sees it. Where the directory cannot be locked
 * within about 2 s (no flock there, or another holds it) the claim is made first and the check
 * follows: of two together each sees the other and both
 * refuse, which loses nothing. Returns 0 with the claim kept (until wc_claim_release, or exit),
 * or the other writer's pid (or 0 when the claim could not be made: the writer will say why)
 * with no claim held. */
long wc_claim_output(const char *path);
/* Ends this process's claim on path: its working file goes if it is still the empty claim. */
void wc_claim_release(const char *path);

/* A file beside path named after it: path's file name with its last extension (".tif") replaced
 * by suffix ("risk.tif" + ".qml" = "risk.qml", "risk.tif" + "_classes.tif" =
 * "risk_classes.tif"; a name without an extension keeps it whole). QGIS finds a layer's default
 * style the same way. Caller frees. */
char *wc_sibling_path(const char *path, const char *suffix);

/* The directory part of path: "." for a bare name, "/" for a file in the root. Caller frees. */
char *wc_dir_of(const char *path);

/* Why a write into dir may have failed when the library that wrote says not (libtiff's "IO
 * error writing directory"): " (the file system of DIR has no inodes left: out of files?)" or
 * " (the file system of DIR has 12 KiB free: out of space?)" below 64 MiB free, into out (size
 * bytes); with room, " (the file-size limit (ulimit -f) is 146.5 KiB: too low for it?)" when
 * the process has one below the free space; "" otherwise, and where nothing can be written anyway
 * (read-only, not writable). */
void wc_fs_shortage(const char *dir, char *out, size_t size);

/* fsync of a file or directory; WC_ERR after a message naming it. */
int wc_fsync_path(const char *path, int directory);
/* fsync of the directory holding path. */
int wc_fsync_parent(const char *path);

/* Removes a working file of an output that was not published (a failed or stopped write), in
 * the directory dir_fd (AT_FDCWD for the current one); one that cannot be removed (a directory
 * made read-only meanwhile) is warned about, named as `shown`, so that its space is not lost
 * unseen. A file already gone says nothing. */
void wc_remove_working_file(int dir_fd, const char *name, const char *shown);

/* Whether two paths name the same file: the same device and inode, or, for a file that does
 * not exist yet, the same absolute path once every symbolic link of its directory is resolved.
 * Hard links, bind mounts, "./x" and "d/../x" all compare equal. */
int wc_same_file(const char *a, const char *b);
/* Whether path is dir itself or lies anywhere below it (resolved as for wc_same_file). */
int wc_path_within(const char *path, const char *dir);
/* Nothing a command writes, replaces or moves may be one of its inputs. outputs are the paths it
 * writes or moves (what_out[i] says what each is, for the message); moved_dirs are directories
 * it moves whole (an input anywhere below one is refused too); inputs (NULL-terminated) are
 * every file it reads, e.g. a VRT and all its tiles. Returns WC_OK, or WC_ERR after a message
 * naming the input, the output and what to change. */
int wc_check_outputs_not_inputs(const char *const *outputs, const char *const *what_out,
                                int noutputs, const char *const *moved_dirs, int nmoved,
                                const char *const *inputs);

/* Whether an output's path is short enough for everything written under names derived from it:
 * its temporary name (wc_temp_path) with GDAL's ".aux.xml" sidecar, within GDAL's path buffers
 * (2048 bytes: a longer path fails inside GDAL, after the work) and, for its file name, within
 * the file system's NAME_MAX. WC_OK, or WC_ERR after a message naming the output and the limit. */
int wc_check_path_length(const char *what, const char *path);
/* The same for a directory written by `writer` ("the run", "synth"): longest is the longest
 * wc_path_derived_length of the files below dir, name the file's name relative to it. WC_OK, or
 * WC_ERR after a message giving the longest --out that fits. */
int wc_check_dir_length(const char *writer, const char *dir, size_t longest, const char *name);
/* GDAL forms file names in buffers of this size (CPLFormFilename and its kin) and fails past it. */
#define WC_GDAL_PATH_BUFFER 2048
/* The length of the longest name written for an output at path (its temporary name with a
 * sidecar's suffix). */
size_t wc_path_derived_length(const char *path);

/* One output path, checked before any work so that a bad path fails at once rather than after
 * minutes of computing: it is not empty, not a directory, not a device, pipe or socket (the
 * rename that publishes an output would replace /dev/null itself), none of the inputs
 * (NULL-terminated, compared as by wc_same_file: a VRT and every tile it references, a
 * checkpoint, a map a picture is drawn from), its length fits (wc_check_path_length), its
 * directory exists and is writable, and an existing file there is not read-only. `what` names
 * the output in the messages ("risk map"). Returns an exit status: WC_EXIT_OK; WC_EXIT_USAGE for
 * an empty path, a device or pipe, an input, or a path too long; WC_EXIT_RUNTIME for the others;
 * each after a message naming the path. */
int wc_check_output_path(const char *what, const char *path, const char *const *inputs);
/* The same, without the length check (for a sidecar, see wc_output). */
int wc_check_output_path_as_is(const char *what, const char *path, const char *const *inputs);

/* The kinds of file wildcpu writes, told by a file's first bytes: an output replaces only a
 * file of its own kind (a map a map, a picture a picture), never a user's file of another that
 * happens to be at its path (`export --out risk.tif`, `evaluate --out tiles.vrt`). */
typedef enum {
    WC_KIND_ANY = 0,     /* an output whose kind is not checked */
    WC_KIND_TIFF,        /* GeoTIFF, COG, BigTIFF */
    WC_KIND_PNG,         /* a picture */
    WC_KIND_JSON,        /* metrics, a STAC item */
    WC_KIND_XML,         /* a QGIS style, GDAL's sidecar */
    WC_KIND_SAFETENSORS, /* exported weights */
    WC_KIND_OTHER        /* none of the above: not wildcpu's */
} wc_file_kind;

/* WC_EXIT_USAGE after a message naming the path and what it holds when a non-empty regular
 * file at path is not of `kind` (WC_KIND_ANY: any file); else WC_EXIT_OK (no file there, an
 * empty one, or one of the kind). */
int wc_refuse_other_kind(const char *what, const char *path, wc_file_kind kind);

/* One file a command writes: what it is, for the messages ("STAC item"), and its path (NULL:
 * not written this time). */
typedef struct wc_output {
    const char *what;
    const char *path;
    /* a sidecar GDAL writes beside another output (PATH.aux.xml), under its own name: no
     * temporary name of its own, so its length is that output's to check */
    int sidecar;
    wc_file_kind kind; /* what a file already at path may be, to be replaced */
} wc_output;

/* Every output of one command, checked together before any work: each as by
 * wc_check_output_path against the inputs and by wc_refuse_other_kind, and no two the same file
 * (a map's STAC item NAME.json and a metrics file of that name: the later would silently
 * replace the earlier). Returns an exit status as wc_check_output_path does, WC_EXIT_USAGE for
 * two outputs on one file or a file of another kind. */
int wc_check_outputs(const wc_output *outs, int n, const char *const *inputs);

/* An atomic replacement in progress. */
typedef struct wc_atomic_file {
    FILE *f;    /* write here */
    char *tmp;  /* the temporary file */
    char *path; /* the target */
} wc_atomic_file;

/* Opens the temporary file for path; WC_ERR after a message (also when path exists and is not a
 * regular file, which the commit's rename would replace). */
int wc_atomic_open(wc_atomic_file *a, const char *path, const char *mode);
/* Flush, fsync, close, rename, fsync of the directory; on any failure a message naming the
 * call and the temporary file is removed. Frees a either way. */
int wc_atomic_commit(wc_atomic_file *a);
/* Gives the replacement up (the content is wrong: a read it was made from failed): the temporary
 * file is removed and the target left as it was. Frees a. */
void wc_atomic_discard(wc_atomic_file *a);

#endif
