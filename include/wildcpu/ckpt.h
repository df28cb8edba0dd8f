/* ckpt.h: checkpoint files: versioned, checksummed, zlib-compressed, written atomically.
 *
 * A checkpoint is a list of named sections (bytes), stored as
 *
 *   header, 64 bytes, little-endian:
 *     0  magic    8 bytes "WCKPT\r\n\x1a"  (a text-mode copy or a truncated transfer breaks it)
 *     8  u32      format version (WC_CKPT_VERSION)
 *     12 u32      format mark 0x01020304 (a constant: every field of the file, header and
 *                 payload, is little-endian whatever the writer's CPU)
 *     16 u64      step
 *     24 u64      payload size uncompressed
 *     32 u64      payload size compressed
 *     40 u32      CRC-32 of header bytes 0..39 and 44..63 and of the compressed payload
 *     44 20 bytes reserved, zero
 *   payload, zlib-compressed: per section
 *     u32 name length, name bytes, u64 data length, data bytes
 *
 * so every byte of the file is covered by the CRC. Writing goes to a temporary file in the same
 * directory, then fflush, fsync, rename over the final name, and fsync of the directory: a crash
 * at any moment leaves the previous checkpoint intact and no torn file under a valid name. Only
 * after the new file is durable are checkpoints beyond the newest `keep` deleted.
 *
 * The sections the trainer stores, and their layout, are documented in docs/checkpoint.md.
 *
 * Not here: what the sections mean (train.c fills and reads them), MPI (rank 0 writes). */
#ifndef WILDCPU_CKPT_H
#define WILDCPU_CKPT_H

#include <stddef.h>
#include <stdint.h>

#define WC_CKPT_VERSION      1
#define WC_CKPT_HEADER       64
#define WC_CKPT_MAX_STEP     ((uint64_t)1 << 40) /* a header step beyond this is corruption */
#define WC_CKPT_MAX_SECTIONS 1024

typedef struct wc_ckpt_section {
    char name[32];
    const void *data;
    size_t size;
} wc_ckpt_section;

/* A checkpoint read into memory; sections point into blob. */
typedef struct wc_ckpt {
    long step;
    uint32_t version;
    size_t file_bytes, payload_bytes;
    uint32_t crc; /* the file's CRC-32 (header bytes 40..43): what tells two files apart */
    int nsections;
    wc_ckpt_section *sections;
    void *blob;
} wc_ckpt;

/* Writes DIR/ckpt-<step:08d>.wcp (or DIR/name when name is not NULL: best.wcp) atomically, then,
 * for a ckpt-* file, keeps only the newest `keep` checkpoints. Returns WC_OK, or WC_ERR after
 * logging which call failed (the previous checkpoints are untouched then and no partial file is
 * left under a checkpoint name). seconds and bytes (may be NULL) receive the write time and
 * file size. */
int wc_ckpt_write(const char *dir, const char *name, long step, const wc_ckpt_section *sections,
                  int n, int keep, double *seconds, size_t *bytes);
/* The checkpoint with the best validation AUC-PR of a run, beside the ckpt-* files: never
 * pruned, and what a run directory means to predict and evaluate. */
#define WC_CKPT_BEST "best.wcp"
/* Where a run keeps its checkpoints in its directory (wc_ckpt_dir_of). */
#define WC_CKPT_DIR "checkpoints"

/* Deletes temporary files a crashed write left in dir (they never have a checkpoint's name, so
 * they are never mistaken for one; this only reclaims their space). */
void wc_ckpt_remove_stale(const char *dir);

/* Reads and validates one file: only a regular file is opened (a FIFO or device under a
 * checkpoint's name is refused, never waited on). On failure returns WC_ERR and describes the
 * problem in why (empty file, truncated, bad magic, version from the future, CRC mismatch,
 * implausible sizes, inconsistent sections, ...). */
int wc_ckpt_read(const char *path, wc_ckpt *ck, char *why, size_t why_size);
/* The same checks on a whole file already in memory (size bytes; file may be NULL when size is
 * 0). Every length in the header and the payload is checked against the bytes that are really
 * there before anything is allocated for it: the payload buffer grows only as the compressed
 * stream actually expands. ck owns its copy of the payload. */
int wc_ckpt_parse(const void *file, size_t size, wc_ckpt *ck, char *why, size_t why_size);
void wc_ckpt_free(wc_ckpt *ck);
/* 1 when path still holds the file ck was read from (the same size and CRC-32 in its header), 0
 * when it was replaced (a training run renames a new best.wcp over the old one) or is gone. */
int wc_ckpt_still_there(const char *path, const wc_ckpt *ck);
/* Refuses (status 2, after a message) an output path that holds a wildcpu checkpoint: a map or
 * an export written there would replace a model the user had. WC_EXIT_OK otherwise. */
int wc_ckpt_refuse_as_output(const char *what, const char *path);
const wc_ckpt_section *wc_ckpt_find(const wc_ckpt *ck, const char *name);

/* A checkpoint file of a directory, as listed: its name parses as ckpt-<1..18 digits>.wcp. */
typedef struct wc_ckpt_entry {
    char *path;
    long name_step; /* the step its name says */
    long step;      /* the step its header says when header_ok, else name_step */
    int header_ok;  /* magic, version, sizes and step of the header check out */
    char why[256];  /* else why not */
} wc_ckpt_entry;

/* The checkpoint files of dir, newest first by the step in their headers (files whose header
 * does not validate sort by their name's step). Names that start like a checkpoint's but do not
 * parse are skipped, with a warning when warn is set. Returns the count (0 for none or a
 * missing dir) or -1 when dir cannot be read. Free with wc_ckpt_list_free. */
int wc_ckpt_list(const char *dir, int warn, wc_ckpt_entry **entries);
/* Renames dir/ckpt-<step>.wcp to that name + "." + suffix (or suffix-2, ...), its new path into
 * aside: 1 when it was, 0 when there is no such file, -1 (warned) when it could not be. A file
 * set aside is no checkpoint of the run's any more (wc_ckpt_list lists only *.wcp). */
int wc_ckpt_set_aside(const char *dir, long step, const char *suffix, char *aside, size_t size);
void wc_ckpt_list_free(wc_ckpt_entry *entries, int n);
/* A listed checkpoint that is gone when it is read was pruned meanwhile by a run writing into
 * the directory (after a newer one was durable): a reader takes the listing again, at most
 * WC_CKPT_LISTINGS times, rather than report the file as not usable. */
#define WC_CKPT_LISTINGS 5
int wc_ckpt_vanished(const char *path);
/* How many of dir's checkpoints (its ckpt-*.wcp files and best.wcp) this process is not
 * permitted to read: a run written under umask 077 by another user of a shared project
 * directory. Such checkpoints are not damaged, so a message about them must not advise starting
 * over (--fresh would set a good run aside). */
int wc_ckpt_unreadable(const char *dir);
/* ", N of them not readable by this user ..." into buf when wc_ckpt_unreadable(dir) > 0, else
 * "": what to do instead of starting over. Returns buf. */
const char *wc_ckpt_unreadable_note(const char *dir, char *buf, size_t size);

/* A check of a checkpoint's content beyond the container (the sections' own validation):
 * WC_OK, or WC_ERR with the reason in why. */
typedef int (*wc_ckpt_check)(const wc_ckpt *ck, void *ctx, char *why, size_t why_size);

/* The newest checkpoint of dir that validates (and passes check, when given), reporting as a
 * warning each newer one that does not and why ("not usable: ..."). Returns WC_OK with ck and
 * *path filled, or WC_ERR when there is no usable one (*found_any tells whether any exist). */
int wc_ckpt_latest(const char *dir, wc_ckpt_check check, void *ctx, wc_ckpt *ck, char **path,
                   int *found_any);

/* Before a run resumes from `resumed` (step `step`) of dir and trains up to step `last`: each
 * checkpoint file it passed over as not usable (a newer version's, a damaged one: its header
 * does not validate, or holds a later step) under a name this run may write (a step in
 * (step, last]) is renamed NAME.unusable (-2, -3, ... when taken), with a warning, so that the
 * run's own checkpoints never replace it: such a file is evidence, never deleted. WC_ERR
 * (after a message) when one cannot be moved. */
int wc_ckpt_keep_passed_over(const char *dir, const char *resumed, long step, long last);

/* The directory that holds the checkpoints of `dir`, a run directory or a directory of
 * checkpoints: DIR/checkpoints when that is a directory (or a link to one), DIR itself when
 * there is no such entry. WC_ERR after a message naming it when DIR/checkpoints is there but
 * cannot hold checkpoints: a file, or a link whose target is gone (a scratch file system not
 * mounted on this node), which would otherwise read as "no checkpoints". */
int wc_ckpt_dir_of(const char *dir, char *buf, size_t size);
/* wc_ckpt_dir_of without a message: for a caller that has already said what went wrong. */
int wc_ckpt_dir_quietly(const char *dir, char *buf, size_t size);

/* "run directory or checkpoint file" -> the checkpoint to use: a directory means its best.wcp
 * (in DIR/checkpoints or DIR itself) when that is usable, else its newest usable checkpoint. */
int wc_ckpt_resolve(const char *path, wc_ckpt_check check, void *ctx, wc_ckpt *ck, char **resolved);

#endif
