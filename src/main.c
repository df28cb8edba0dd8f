/* main.c: the wildcpu program: parses the command line and calls the library. Usage errors go
 * to stderr with exit status 2; every other outcome is the status the library returns. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wildcpu/blas_core.h"
#include "wildcpu/dist.h"
#include "wildcpu/export.h"
#include "wildcpu/inspect.h"
#include "wildcpu/predict.h"
#include "wildcpu/run.h"
#include "wildcpu/stop.h"
#include "wildcpu/synth.h"
#include "wildcpu/train.h"
#include "wildcpu/util.h"

/* Each command's usage line(s), without the "usage: " or the indent of the list they make. */
#define TRAIN_USAGE "wildcpu [train] --tiles PATH [options]     train, then write the risk map\n"
#define PREDICT_USAGE                                                                              \
    "wildcpu predict --tiles PATH --checkpoint PATH --out risk.tif [--png risk.png] [--cog] "      \
    "[--classes]\n"                                                                                \
    "                       [--no-style] [--threads N]\n"
#define SYNTH_USAGE "wildcpu synth --out DIR [--size PIXELS] [--tile PIXELS] [--seed N]\n"
#define EVALUATE_USAGE                                                                             \
    "wildcpu evaluate --tiles PATH --checkpoint PATH [--labels PATH] [--label-band B] "            \
    "[--out metrics.json] [--map risk.tif]\n"                                                      \
    "                       [--threads N]\n"
#define INFO_USAGE   "wildcpu info PATH                      a checkpoint file or a run directory\n"
#define EXPORT_USAGE "wildcpu export --checkpoint PATH --out model.safetensors\n"
#define USAGE_AGAIN  "       " /* the indent of a usage line after the first */

static const char *USAGE = "usage: " TRAIN_USAGE USAGE_AGAIN PREDICT_USAGE USAGE_AGAIN SYNTH_USAGE
    USAGE_AGAIN EVALUATE_USAGE USAGE_AGAIN INFO_USAGE USAGE_AGAIN EXPORT_USAGE USAGE_AGAIN
                           "wildcpu --help | --version | COMMAND --help\n";

/* What a usage error prints: every command's usage until the command is known, then that
 * command's alone (each cmd_* sets it first), so that its message stands beside its usage. */
static const char *usage_text;

#define COMMAND_USAGE(name, lines) ("usage: " lines USAGE_AGAIN "wildcpu " name " --help\n")

static const char *TRAIN_HELP =
    "wildcpu [train] --tiles PATH [options]\n"
    "\n"
    "Trains a per-pixel wildfire-risk network on the raster PATH (any raster GDAL opens, normally\n"
    "a VRT mosaic of GeoTIFF tiles; every band but the label band is a feature), on every MPI\n"
    "rank of the job, then writes the risk map. Rerunning the same command resumes from the\n"
    "newest valid checkpoint in --out.\n"
    "\n"
    "input\n"
    "  --tiles PATH            the raster (required)\n"
    "  --label-band NAME|N     the label band, by description or number [fire]\n"
    "  --labels PATH           labels from elsewhere: a raster, or burned-area polygons (any\n"
    "                          vector format and CRS, rasterized onto the tiles' grid)\n"
    "  --oracle PATH           a true-probability raster on the same grid, evaluated alongside\n"
    "                          [oracle_risk.tif in the directory of --tiles, if present; '' none]\n"
    "  --patch N               patch side in pixels [64]\n"
    "  --val-fraction F        share of patches held out, in whole spatial blocks [0.2]\n"
    "  --val-block PIXELS      side of a validation block [256]\n"
    "training\n"
    "  --out DIR               run directory [run]\n"
    "  --model NAME|FILE       unet-lite, logistic, or a network spec file [unet-lite]\n"
    "  --epochs N | --steps N  length of training [10 epochs]\n"
    "  --batch N               global batch, samples per optimizer step, any rank count [32]\n"
    "  --micro-batch N         samples per forward/backward pass [4]\n"
    "  --optimizer adamw|sgd   [adamw]\n"
    "  --lr X                  peak learning rate [adamw 5e-4, sgd 0.05; logistic with adamw "
    "0.05]\n"
    "  --lr-scaling linear|none\n"
    "                          linear: scale --lr by --batch / --lr-ref-batch [none]\n"
    "  --lr-ref-batch N        the batch --lr was tuned for [32]\n"
    "  --weight-decay X        [adamw 1e-2, sgd 1e-4]\n"
    "  --warmup N              linear warmup steps [min(100, steps/10)]\n"
    "  --lr-end F              the cosine decay ends at F x the peak rate, 0 to 1 [adamw 0.4;\n"
    "                          sgd and logistic 0.05]\n"
    "  --pos-weight X          loss weight of burned pixels [1]\n"
    "  --seed N                [1]\n"
    "  --threads N             threads per rank [$SLURM_CPUS_PER_TASK or 1]\n"
    "  --fast-reduce           plain float gradient sum: faster, not bitwise rank-independent\n"
    "  --no-overlap            reduce the gradient after backward, not in buckets during it\n"
    "  --no-jitter             train on the fixed patches (default: each epoch shifts every\n"
    "                          training patch by up to half a patch, on the pooling grid)\n"
    "  --augment               mirror and turn each training sample, its vector bands with it\n"
    "                          [off: patches as they lie]\n"
    "  --rotate DEG            turn each training sample by a random angle up to DEG either\n"
    "                          way (bilinear), its vector bands with it [0: off]\n"
    "  --vector-bands none|E:N,...\n"
    "                          band pairs (east, north component) that turn with a patch\n"
    "                          [found by name: X_u:X_v, aspect_sin:aspect_cos, u10:v10,\n"
    "                          X_east:X_north, eastness:northness, ...]\n"
    "  --prefetch N            read-ahead slots per rank, one micro-batch each [2m + 1, where m\n"
    "                          is the rank's micro-batches per step; a smaller N is raised to m + "
    "1]\n"
    "checkpoints and output\n"
    "  --ckpt-every STEPS      checkpoint every STEPS steps [off]\n"
    "  --ckpt-minutes M        checkpoint every M minutes [when neither is given: 1 to 10,\n"
    "                          200 x the last background write's time]\n"
    "  --keep K                checkpoints kept [3]\n"
    "  --fresh                 start over: the previous run's files move to DIR/replaced-TIME/\n"
    "  --log-every STEPS       progress line interval [10]\n"
    "  --no-predict            skip the risk map at the end\n"
    "  --cog, --classes, --no-style\n"
    "                          risk map options (see predict --help)\n"
    "  --baseline REPORT.json  compare this run with another in report.md\n"
    "\n"
    "exit status: 0 done, 1 runtime error, 2 usage error, 75 stopped by a signal (TERM, USR1,\n"
    "INT, HUP) after writing a checkpoint (run the same command again to resume; without\n"
    "--fresh if it had moved the previous run aside)\n";

/* Whether what was printed on standard output is the command's product (info, --help,
 * --version) rather than a log of a run whose products are files. */
static int stdout_is_the_product;

/* Prints a --help text, the command's product. */
static int print_help(const char *text) {
    fputs(text, stdout);
    stdout_is_the_product = 1;
    return WC_EXIT_OK;
}

/* The command's status once its standard output is flushed. Output lost to a full disk or an
 * I/O error (`wildcpu info run >/dev/full`) is an error where it is the product, and a warning
 * where it is a log (the run's files are complete); a closed pipe (`| head -1`) is the reader's
 * choice and says nothing (docs/cli.md). */
static int check_stdout(int status) {
    errno = 0;
    const int failed = fflush(stdout) != 0 || ferror(stdout);
    const int err = errno;
    /* errno tells EPIPE only when this flush failed: a write that failed earlier (output larger
     * than the buffer, with SIGPIPE ignored) leaves the error flag and errno 0. A pipe whose
     * reader is gone polls as an error (a socket's as hung up) whenever it is asked. */
    struct pollfd out = {.fd = STDOUT_FILENO, .events = 0};
    if (!failed || err == EPIPE || (poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP))))
        return status;
    const char *why = err ? strerror(err) : "a write failed";
    if (!stdout_is_the_product) {
        wc_warn("standard output: %s: lines this run printed were lost (its files are complete)",
                why);
        return status;
    }
    wc_error("standard output: %s: what this command printed was lost", why);
    return status == WC_EXIT_OK ? WC_EXIT_RUNTIME : status;
}

/* A usage error: its message, then the usage. Said once, by rank 0, once MPI has started: every
 * rank parses the same words (same_command_everywhere), so the others would repeat it. Before
 * MPI starts (an unknown command) each process says it: it may be the only one that can. */
static int vusage_error(const char *fmt, va_list ap) {
    if (wc_dist_rank() != 0) return WC_EXIT_USAGE;
    fprintf(stderr, "wildcpu: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%s", usage_text ? usage_text : USAGE);
    return WC_EXIT_USAGE;
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int status = vusage_error(fmt, ap);
    va_end(ap);
    return status;
}

/* --label-band's value, as far as it is wrong whatever the raster: empty, or the band number 0
 * (GDAL numbers bands from 1; a band described "0" cannot be chosen by name). */
static int check_label_band(const char *band) {
    if (band && !*band)
        return usage_error("--label-band: empty (give a band's description or number)");
    if (band && strspn(band, "0") == strlen(band))
        return usage_error("--label-band %s: bands are numbered from 1", band);
    return WC_EXIT_OK;
}

/* getopt_long's '?': an option it does not know, or (optopt set, "--name=value") a value given
 * to an option that takes none. `where` ends the first message ("for synth", ...). No short
 * option exists: one is named by its letter (optopt), since inside a cluster ("-x=1") getopt
 * has not moved past the argument and `name` is the one before it (long options are 256 up).
 */
static int option_error(char **argv, const struct option *opts, const char *name,
                        const char *where) {
    if (optopt > 0 && optopt < 256) {
        /* the word it came in, when one starts so: "-tiles" wants two dashes */
        for (char **a = argv + 1; *a && strcmp(*a, "--"); a++)
            if ((*a)[0] == '-' && (*a)[1] == optopt && (*a)[2])
                return usage_error("unknown option -%c, in %s: long options take two dashes "
                                   "(--%s) %s",
                                   optopt, *a, *a + 1, where);
        return usage_error("unknown option -%c %s", optopt, where);
    }
    const char *eq = strchr(name, '=');
    if (optopt != 0 && eq) return usage_error("option %.*s takes no value", (int)(eq - name), name);
    /* getopt says the same of a prefix of two or more names as of no name at all */
    const char *word = name + strspn(name, "-");
    const size_t len = eq ? (size_t)(eq - word) : strlen(word);
    char matches[512] = "";
    int n = 0;
    for (const struct option *o = opts; len && o->name; o++)
        if (strncmp(o->name, word, len) == 0) {
            const size_t used = strlen(matches);
            snprintf(matches + used, sizeof matches - used, "%s--%s", n++ ? ", " : "", o->name);
        }
    if (n > 1)
        return usage_error("option --%.*s is ambiguous: it could be %s", (int)len, word, matches);
    return usage_error("unknown option %s %s", name, where);
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || isspace((unsigned char)*s) || v < lo || v > hi) {
        usage_error("%s needs a whole number between %ld and %ld, got '%s'", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* decimal only: strtod also reads hexadecimal ("0x10" is 16); both skip leading blanks */
    const int decimal = !strpbrk(s, "xX") && !isspace((unsigned char)*s);
    /* a number below the smallest normal double (1e-310) is read as its subnormal value, or 0:
     * its range decides, not strtod's ERANGE ("between 0 and 0.9, got '1e-310'" contradicted
     * itself) */
    const int underflow = errno == ERANGE && fabs(v) < DBL_MIN;
    if (underflow && v == 0 && end != s && !*end && decimal) { /* 1e-400: not silently 0 */
        usage_error("%s: '%s' is smaller than any number but 0 a double holds (4.9e-324); give "
                    "a number between %g and %g",
                    opt, s, lo, hi);
        return -1;
    }
    if ((errno && !underflow) || end == s || *end || !decimal || !isfinite(v) || v < lo || v > hi) {
        usage_error("%s needs a number between %g and %g, got '%s'", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* --threads' default, for a run that did not give it: SLURM_CPUS_PER_TASK (Slurm's
 * --cpus-per-task) when it is a whole number from 1 to 1024, as --threads takes, else 1. *from
 * names the variable when the value came from it, so that a refusal of too many threads blames
 * it, not a --threads the user never gave. A value set but not such a number ("2abc", "0") is
 * said once (rank 0), not read as far as it goes. */
static int default_threads(const char **from) {
    *from = NULL;
    const char *s = getenv("SLURM_CPUS_PER_TASK");
    if (!s) return 1;
    char *end = NULL;
    errno = 0;
    const long n = isdigit((unsigned char)*s) ? strtol(s, &end, 10) : 0;
    if (end && !*end && !errno && n >= 1 && n <= 1024) {
        *from = "SLURM_CPUS_PER_TASK";
        return (int)n;
    }
    if (wc_dist_rank() == 0)
        wc_warn("SLURM_CPUS_PER_TASK='%.40s' is not a whole number from 1 to 1024: ignored, each "
                "rank runs 1 thread (--threads N sets another)",
                s);
    return 1;
}

/* ---- train ------------------------------------------------------------------------------- */

enum {
    O_TILES = 256,
    O_LABELS,
    O_LABEL_BAND,
    O_ORACLE,
    O_PATCH,
    O_VAL_FRACTION,
    O_VAL_BLOCK,
    O_OUT,
    O_MODEL,
    O_EPOCHS,
    O_STEPS,
    O_BATCH,
    O_MICRO,
    O_OPTIMIZER,
    O_LR,
    O_LR_SCALING,
    O_LR_REF,
    O_WD,
    O_WARMUP,
    O_LR_END,
    O_POS_WEIGHT,
    O_SEED,
    O_THREADS,
    O_FAST_REDUCE,
    O_NO_OVERLAP,
    O_CKPT_EVERY,
    O_CKPT_MIN,
    O_KEEP,
    O_FRESH,
    O_LOG_EVERY,
    O_NO_PREDICT,
    O_COG,
    O_CLASSES,
    O_BASELINE,
    O_PREFETCH,
    O_HELP,
    O_CHECKPOINT,
    O_PNG,
    O_SIZE,
    O_TILE,
    O_NO_JITTER,
    O_AUGMENT,
    O_ROTATE,
    O_VECTOR_BANDS,
    O_MAP,
    O_NO_STYLE,
    O_EMPTY_PATH, /* next_option's: a path option given "" (after the message) */
};

/* The options whose value names a file or directory. --oracle is not one of them: '' is its
 * documented way to say "none". */
static int takes_path(int o) {
    switch (o) {
    case O_TILES:
    case O_LABELS:
    case O_OUT:
    case O_MODEL:
    case O_BASELINE:
    case O_CHECKPOINT:
    case O_PNG:
    case O_MAP:
        return 1;
    default:
        return 0;
    }
}

/* getopt_long for every command, with one check: a path option given an empty value
 * ("--tiles=", "--out ''") is a usage error here, rather than a garbled one from GDAL or open()
 * later. */
static int next_option(int argc, char **argv, const struct option *opts) {
    int index = -1;
    const int o = getopt_long(argc, argv, ":", opts, &index);
    if (o > 0 && index >= 0 && optarg && !*optarg && takes_path(o)) {
        usage_error("--%s: empty path", opts[index].name);
        return O_EMPTY_PATH;
    }
    return o;
}

/* Without opening it: a pipe there must not block the start (it is refused later, as an
 * --oracle that is a pipe is, naming it). */
static int file_exists(const char *p) {
    return access(p, F_OK) == 0;
}

/* The oracle a synthetic region keeps beside its mosaic (synth.h), when there is one beside
 * tiles; else NULL. Rank 0 decides, so that every rank takes the same path (one that does not
 * see the file is then refused, naming it, rather than leaving the others in a collective). */
static const char *oracle_beside(const char *tiles) {
    static char guess[4096];
    const char *slash = strrchr(tiles, '/');
    int dirlen = slash ? (int)(slash - tiles) : 1;
    snprintf(guess, sizeof guess, "%.*s/" WC_SYNTH_ORACLE, dirlen, slash ? tiles : ".");
    int exists = wc_dist_rank() == 0 && file_exists(guess);
    wc_dist_bcast(&exists, sizeof exists, 0);
    return exists ? guess : NULL;
}

static int cmd_train(int argc, char **argv) {
    static const struct option opts[] = {{"tiles", 1, 0, O_TILES},
                                         {"labels", 1, 0, O_LABELS},
                                         {"label-band", 1, 0, O_LABEL_BAND},
                                         {"oracle", 1, 0, O_ORACLE},
                                         {"patch", 1, 0, O_PATCH},
                                         {"val-fraction", 1, 0, O_VAL_FRACTION},
                                         {"val-block", 1, 0, O_VAL_BLOCK},
                                         {"out", 1, 0, O_OUT},
                                         {"model", 1, 0, O_MODEL},
                                         {"epochs", 1, 0, O_EPOCHS},
                                         {"steps", 1, 0, O_STEPS},
                                         {"batch", 1, 0, O_BATCH},
                                         {"micro-batch", 1, 0, O_MICRO},
                                         {"optimizer", 1, 0, O_OPTIMIZER},
                                         {"lr", 1, 0, O_LR},
                                         {"lr-scaling", 1, 0, O_LR_SCALING},
                                         {"lr-ref-batch", 1, 0, O_LR_REF},
                                         {"weight-decay", 1, 0, O_WD},
                                         {"warmup", 1, 0, O_WARMUP},
                                         {"lr-end", 1, 0, O_LR_END},
                                         {"pos-weight", 1, 0, O_POS_WEIGHT},
                                         {"seed", 1, 0, O_SEED},
                                         {"threads", 1, 0, O_THREADS},
                                         {"fast-reduce", 0, 0, O_FAST_REDUCE},
                                         {"ckpt-every", 1, 0, O_CKPT_EVERY},
                                         {"ckpt-minutes", 1, 0, O_CKPT_MIN},
                                         {"keep", 1, 0, O_KEEP},
                                         {"fresh", 0, 0, O_FRESH},
                                         {"log-every", 1, 0, O_LOG_EVERY},
                                         {"no-predict", 0, 0, O_NO_PREDICT},
                                         {"cog", 0, 0, O_COG},
                                         {"classes", 0, 0, O_CLASSES},
                                         {"baseline", 1, 0, O_BASELINE},
                                         {"prefetch", 1, 0, O_PREFETCH},
                                         {"help", 0, 0, O_HELP},
                                         {"no-jitter", 0, 0, O_NO_JITTER},
                                         {"augment", 0, 0, O_AUGMENT},
                                         {"rotate", 1, 0, O_ROTATE},
                                         {"vector-bands", 1, 0, O_VECTOR_BANDS},
                                         {"no-style", 0, 0, O_NO_STYLE},
                                         {"no-overlap", 0, 0, O_NO_OVERLAP},
                                         {0, 0, 0, 0}};
    wc_train_config c;
    wc_train_config_default(&c);
    usage_text = COMMAND_USAGE("train", TRAIN_USAGE);
    c.threads = 0; /* not given: default_threads() after the options */
    int lr_set = 0, wd_set = 0, oracle_set = 0;
    double lr = 0, wd = 0, lr_end = -1;
    long v;
    int micro_given = 0; /* for the message when the default exceeds --batch */
    optind = 1;
    opterr = 0;
    for (int o; (o = next_option(argc, argv, opts)) != -1;) {
        const char *name = argv[optind - 1];
        switch (o) {
        case O_TILES:
            c.data.tiles = optarg;
            break;
        case O_LABELS:
            c.data.labels = optarg;
            break;
        case O_LABEL_BAND:
            c.data.label_band = optarg;
            break;
        case O_ORACLE:
            c.data.oracle = *optarg ? optarg : NULL, oracle_set = 1;
            break;
        case O_PATCH:
            if (parse_long("--patch", optarg, 4, 4096, &v)) return WC_EXIT_USAGE;
            c.data.patch = (int)v;
            break;
        case O_VAL_FRACTION:
            if (parse_double("--val-fraction", optarg, 0, 0.9, &c.data.val_fraction))
                return WC_EXIT_USAGE;
            break;
        case O_VAL_BLOCK:
            if (parse_long("--val-block", optarg, 1, 1 << 20, &v)) return WC_EXIT_USAGE;
            c.data.val_block_px = (int)v;
            break;
        case O_OUT:
            c.out_dir = optarg;
            break;
        case O_MODEL:
            c.model = optarg;
            break;
        case O_EPOCHS:
            if (parse_long("--epochs", optarg, 1, 1000000, &c.epochs)) return WC_EXIT_USAGE;
            break;
        case O_STEPS:
            if (parse_long("--steps", optarg, 1, 1000000000, &c.steps)) return WC_EXIT_USAGE;
            break;
        case O_BATCH:
            if (parse_long("--batch", optarg, 1, 1 << 20, &v)) return WC_EXIT_USAGE;
            c.batch = (int)v;
            break;
        case O_MICRO:
            if (parse_long("--micro-batch", optarg, 1, 1 << 16, &v)) return WC_EXIT_USAGE;
            c.micro_batch = (int)v;
            micro_given = 1;
            break;
        case O_OPTIMIZER:
            if (strcmp(optarg, "adamw") == 0)
                c.optim.kind = WC_OPTIM_ADAMW;
            else if (strcmp(optarg, "sgd") == 0)
                c.optim.kind = WC_OPTIM_SGD;
            else
                return usage_error("--optimizer takes adamw or sgd, got '%s'", optarg);
            break;
        case O_LR:
            if (parse_double("--lr", optarg, 1e-12, 100, &lr)) return WC_EXIT_USAGE;
            lr_set = 1;
            break;
        case O_LR_SCALING:
            if (strcmp(optarg, "linear") == 0)
                c.lr_scaling_linear = 1;
            else if (strcmp(optarg, "none") == 0)
                c.lr_scaling_linear = 0;
            else
                return usage_error("--lr-scaling takes linear or none, got '%s'", optarg);
            break;
        case O_LR_REF:
            if (parse_long("--lr-ref-batch", optarg, 1, 1 << 20, &v)) return WC_EXIT_USAGE;
            c.lr_ref_batch = (int)v;
            break;
        case O_WD:
            if (parse_double("--weight-decay", optarg, 0, 10, &wd)) return WC_EXIT_USAGE;
            wd_set = 1;
            break;
        case O_WARMUP:
            if (parse_long("--warmup", optarg, 0, 1000000000, &c.optim.warmup_steps))
                return WC_EXIT_USAGE;
            break;
        case O_LR_END:
            if (parse_double("--lr-end", optarg, 0, 1, &lr_end)) return WC_EXIT_USAGE;
            break;
        case O_POS_WEIGHT:
            if (parse_double("--pos-weight", optarg, 1e-3, 1e4, &c.pos_weight))
                return WC_EXIT_USAGE;
            break;
        case O_SEED:
            if (parse_long("--seed", optarg, 0, LONG_MAX, &v)) return WC_EXIT_USAGE;
            c.seed = (uint64_t)v;
            break;
        case O_THREADS:
            if (parse_long("--threads", optarg, 1, 1024, &v)) return WC_EXIT_USAGE;
            c.threads = (int)v;
            break;
        case O_FAST_REDUCE:
            c.fast_reduce = 1;
            break;
        case O_NO_OVERLAP:
            c.no_overlap = 1;
            break;
        case O_NO_JITTER:
            c.no_jitter = 1;
            break;
        case O_AUGMENT:
            c.augment = 1;
            break;
        case O_ROTATE:
            if (parse_double("--rotate", optarg, 0, 180, &c.data.turn_deg)) return WC_EXIT_USAGE;
            break;
        case O_VECTOR_BANDS:
            c.data.vector_bands = optarg;
            break;
        case O_CKPT_EVERY:
            if (parse_long("--ckpt-every", optarg, 1, 1000000000, &c.ckpt_every))
                return WC_EXIT_USAGE;
            break;
        case O_CKPT_MIN:
            if (parse_double("--ckpt-minutes", optarg, 0.001, 1e6, &c.ckpt_minutes))
                return WC_EXIT_USAGE;
            break;
        case O_KEEP:
            if (parse_long("--keep", optarg, 1, 1000000, &v)) return WC_EXIT_USAGE;
            c.keep = (int)v;
            break;
        case O_FRESH:
            c.fresh = 1;
            break;
        case O_LOG_EVERY:
            if (parse_long("--log-every", optarg, 1, 1000000000, &c.log_every))
                return WC_EXIT_USAGE;
            break;
        case O_NO_PREDICT:
            c.no_predict = 1;
            break;
        case O_COG:
            c.cog = 1;
            break;
        case O_CLASSES:
            c.classes = 1;
            break;
        case O_NO_STYLE:
            c.no_style = 1;
            break;
        case O_BASELINE:
            c.baseline = optarg;
            break;
        case O_PREFETCH:
            if (parse_long("--prefetch", optarg, 1, 4096, &v)) return WC_EXIT_USAGE;
            c.prefetch = (int)v;
            break;
        case O_HELP:
            return print_help(TRAIN_HELP);
        case ':':
            return usage_error("option %s needs a value", name);
        case O_EMPTY_PATH:
            return WC_EXIT_USAGE;
        default:
            return option_error(argv, opts, name, "(see wildcpu --help)");
        }
    }
    if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
    if (!c.threads) c.threads = default_threads(&c.threads_from);
    if (!c.data.tiles) return usage_error("--tiles PATH is required");
    if (check_label_band(c.data.label_band) != WC_EXIT_OK) return WC_EXIT_USAGE;
    if (c.micro_batch > c.batch)
        return usage_error("--micro-batch (%d%s) must not exceed --batch (%d): give --micro-batch "
                           "%d or less",
                           c.micro_batch, micro_given ? "" : ", the default", c.batch, c.batch);
    if (c.optim.kind == WC_OPTIM_SGD) {
        long warm = c.optim.warmup_steps;
        wc_optim_config_default(&c.optim, WC_OPTIM_SGD);
        c.optim.warmup_steps = warm;
    }
    if (lr_set) c.optim.lr = lr; /* else the model's and the optimizer's: wc_train_lr */
    if (wd_set) c.optim.weight_decay = wd;
    c.optim.min_lr_ratio = lr_end; /* -1: the model's and the optimizer's, wc_train_lr_end */
    /* every step scales each weight by 1 - lr x weight decay (both optimizers): at 1 or more
     * that zeroes or flips the weights, whatever the data. Said, not refused: a rate that high
     * diverges anyway, and that is caught and named in the step where it happens. */
    const double peak = wc_train_peak_lr(&c);
    /* --lr's range holds for the rate after --lr-scaling too. The product is of options alone,
     * so it is refused here with the others' combinations, before any data is opened: found
     * after planning it (minutes on a large mosaic), it came after this very rate's warning
     * below and after the data's own refusals (a --batch the patches cannot fill gave status 1
     * for what is a usage error), and left DIR/checkpoints behind. */
    if (!(peak >= 1e-12 && peak <= 100))
        return usage_error("--lr %g%s scaled linearly by --batch %d / --lr-ref-batch %d gives %g, "
                           "outside 1e-12 to 100: %s --lr, or --lr-scaling none",
                           wc_train_lr(&c), lr_set ? "" : " (the default)", c.batch, c.lr_ref_batch,
                           peak, peak > 100 ? "lower" : "raise");
    char scaled[80] = "";
    if (c.lr_scaling_linear)
        snprintf(scaled, sizeof scaled, ", %g after --lr-scaling linear", peak);
    if (peak * c.optim.weight_decay >= 1 && wc_dist_rank() == 0)
        wc_warn("--lr %g%s%s with --weight-decay %g%s: every step at the peak rate multiplies "
                "each weight by 1 - lr x weight decay = %g, which zeroes or flips it; lower one "
                "of them (their product must be below 1)",
                wc_train_lr(&c), lr_set ? "" : " (the default)", scaled, c.optim.weight_decay,
                wd_set ? "" : " (the default)", 1 - peak * c.optim.weight_decay);
    /* a synthetic region carries its true probabilities: evaluate them alongside */
    const char *beside = oracle_set ? NULL : oracle_beside(c.data.tiles);
    if (beside) c.data.oracle = beside, c.data.oracle_found = 1;
    return wc_run_train_and_map(&c);
}

/* ---- the other commands ------------------------------------------------------------------ */

static int cmd_synth(int argc, char **argv) {
    static const struct option opts[] = {{"out", 1, 0, O_OUT},   {"size", 1, 0, O_SIZE},
                                         {"tile", 1, 0, O_TILE}, {"seed", 1, 0, O_SEED},
                                         {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    wc_synth_config c;
    wc_synth_config_default(&c);
    usage_text = COMMAND_USAGE("synth", SYNTH_USAGE);
    c.out_dir = NULL;
    long v;
    optind = 1;
    opterr = 0;
    for (int o; (o = next_option(argc, argv, opts)) != -1;) {
        const char *name = argv[optind - 1];
        switch (o) {
        case O_OUT:
            c.out_dir = optarg;
            break;
        case O_SIZE:
            if (parse_long("--size", optarg, WC_SYNTH_MIN_SIZE, WC_SYNTH_MAX_SIZE, &v))
                return WC_EXIT_USAGE;
            c.size = (int)v;
            break;
        case O_TILE:
            if (parse_long("--tile", optarg, WC_SYNTH_MIN_TILE, WC_SYNTH_MAX_SIZE, &v))
                return WC_EXIT_USAGE;
            c.tile = (int)v;
            break;
        case O_SEED:
            if (parse_long("--seed", optarg, 0, LONG_MAX, &v)) return WC_EXIT_USAGE;
            c.seed = (uint64_t)v;
            break;
        case O_HELP:
            return print_help(
                "wildcpu synth --out DIR [--size PIXELS] [--tile PIXELS] [--seed N]\n\n"
                "Writes a synthetic georeferenced region (EPSG:32611, 30 m pixels) as GeoTIFF\n"
                "tiles plus DIR/tiles.vrt (12 feature bands and the `fire` label band) and\n"
                "DIR/oracle_risk.tif, the true burn probability the labels were drawn from.\n"
                "Defaults: --size 1024 --tile 256 --seed 1. See docs/synthetic.md.\n\n"
                "exit status: 0 written, 1 runtime error, 2 usage error\n");
        case ':':
            return usage_error("option %s needs a value", name);
        case O_EMPTY_PATH:
            return WC_EXIT_USAGE;
        default:
            return option_error(argv, opts, name, "for synth");
        }
    }
    if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
    if (!c.out_dir) return usage_error("synth needs --out DIR");
    if (wc_synth_check_out(&c) != WC_OK) return WC_EXIT_USAGE; /* a path, as the others' */
    if (wc_dist_rank() != 0) return WC_EXIT_OK;                /* one writer */
    /* an address-space limit without room for the writer's generation, as the others' */
    if (wc_synth_check_memory(&c) != WC_OK) return WC_EXIT_USAGE;
    return wc_synth_write(&c) == WC_OK ? WC_EXIT_OK : WC_EXIT_RUNTIME;
}

/* predict and evaluate: one parser, as they run the same path (predict.h); each command's own
 * table (below) says which options it takes. evaluate scores the map against labels and
 * writes it only with --map; its --out is the metrics. */
static int parse_map_command(int argc, char **argv, const struct option *opts, int evaluate) {
    wc_predict_config c;
    wc_predict_config_default(&c);
    c.evaluate = evaluate;
    c.threads = 0; /* not given: default_threads() after the options */
    long v;
    optind = 1;
    opterr = 0;
    for (int o; (o = next_option(argc, argv, opts)) != -1;) {
        const char *name = argv[optind - 1];
        switch (o) {
        case O_TILES:
            c.tiles = optarg;
            break;
        case O_CHECKPOINT:
            c.checkpoint = optarg;
            break;
        case O_OUT:
            *(evaluate ? &c.metrics_out : &c.out) = optarg;
            break;
        case O_PNG:
            c.png = optarg;
            break;
        case O_COG:
            c.cog = 1;
            break;
        case O_CLASSES:
            c.classes = 1;
            break;
        case O_NO_STYLE:
            c.no_style = 1;
            break;
        case O_LABELS:
            c.labels = optarg;
            break;
        case O_LABEL_BAND:
            c.label_band = optarg;
            break;
        case O_MAP:
            c.out = optarg;
            break;
        case O_THREADS:
            if (parse_long("--threads", optarg, 1, 1024, &v)) return WC_EXIT_USAGE;
            c.threads = (int)v;
            break;
        case O_HELP:
            return print_help(evaluate ? WC_EVALUATE_HELP : WC_PREDICT_HELP);
        case ':':
            return usage_error("option %s needs a value", name);
        case O_EMPTY_PATH:
            return WC_EXIT_USAGE;
        default:
            return option_error(argv, opts, name, evaluate ? "for evaluate" : "for predict");
        }
    }
    if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
    if (!c.threads) c.threads = default_threads(&c.threads_from);
    if (evaluate && (!c.tiles || !c.checkpoint))
        return usage_error("evaluate needs --tiles and --checkpoint");
    if (!evaluate && (!c.tiles || !c.checkpoint || !c.out))
        return usage_error("predict needs --tiles, --checkpoint and --out");
    if (check_label_band(c.label_band) != WC_EXIT_OK) return WC_EXIT_USAGE;
    return wc_predict_run(&c);
}

static int cmd_predict(int argc, char **argv) {
    static const struct option opts[] = {
        {"tiles", 1, 0, O_TILES},     {"checkpoint", 1, 0, O_CHECKPOINT},
        {"out", 1, 0, O_OUT},         {"png", 1, 0, O_PNG},
        {"cog", 0, 0, O_COG},         {"classes", 0, 0, O_CLASSES},
        {"threads", 1, 0, O_THREADS}, {"no-style", 0, 0, O_NO_STYLE},
        {"help", 0, 0, O_HELP},       {0, 0, 0, 0}};
    usage_text = COMMAND_USAGE("predict", PREDICT_USAGE);
    return parse_map_command(argc, argv, opts, 0);
}

static int cmd_evaluate(int argc, char **argv) {
    static const struct option opts[] = {{"tiles", 1, 0, O_TILES},
                                         {"checkpoint", 1, 0, O_CHECKPOINT},
                                         {"labels", 1, 0, O_LABELS},
                                         {"label-band", 1, 0, O_LABEL_BAND},
                                         {"out", 1, 0, O_OUT},
                                         {"map", 1, 0, O_MAP},
                                         {"threads", 1, 0, O_THREADS},
                                         {"help", 0, 0, O_HELP},
                                         {0, 0, 0, 0}};
    usage_text = COMMAND_USAGE("evaluate", EVALUATE_USAGE);
    return parse_map_command(argc, argv, opts, 1);
}

/* info: one PATH, which may start with '-' after "--" (as GNU tools take the end of options). */
static int cmd_info(int argc, char **argv) {
    static const struct option opts[] = {{"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    usage_text = COMMAND_USAGE("info", INFO_USAGE);
    optind = 1;
    opterr = 0;
    for (int o; (o = next_option(argc, argv, opts)) != -1;) {
        const char *name = argv[optind - 1];
        if (o != O_HELP) return option_error(argv, opts, name, "for info");
        if (argc != 2) return usage_error("info --help takes nothing else");
        return print_help(
            "wildcpu info PATH\n\n"
            "Describes a checkpoint file (header, step, epoch, ranks that wrote it, data\n"
            "fingerprint, metrics, parameter digest), or lists a run directory's checkpoints with\n"
            "their validity, which one a rerun resumes from, and whether the directory's last run\n"
            "was stopped by a signal (DIR/STOPPED). A PATH that starts with '-' follows '--'.\n\n"
            "exit status: 0 described, 1 PATH cannot be read or is a file that is not a usable\n"
            "checkpoint, 2 usage error\n");
    }
    if (argc - optind != 1) return usage_error("info takes exactly one PATH");
    if (!*argv[optind]) return usage_error("info: empty path");
    stdout_is_the_product = 1;
    return wc_inspect_run(argv[optind]);
}

static int cmd_export(int argc, char **argv) {
    static const struct option opts[] = {{"checkpoint", 1, 0, O_CHECKPOINT},
                                         {"out", 1, 0, O_OUT},
                                         {"help", 0, 0, O_HELP},
                                         {0, 0, 0, 0}};
    const char *ckpt = NULL, *out = NULL;
    usage_text = COMMAND_USAGE("export", EXPORT_USAGE);
    optind = 1;
    opterr = 0;
    for (int o; (o = next_option(argc, argv, opts)) != -1;) {
        const char *name = argv[optind - 1];
        switch (o) {
        case O_CHECKPOINT:
            ckpt = optarg;
            break;
        case O_OUT:
            out = optarg;
            break;
        case O_HELP:
            return print_help("wildcpu export --checkpoint PATH --out model.safetensors\n\n"
                              "Writes the weights in safetensors format with PyTorch's names and "
                              "layouts, and the input channels, their normalization and the "
                              "nodata policy in __metadata__.\n\n"
                              "exit status: 0 written, 1 runtime error, 2 usage error\n");
        case ':':
            return usage_error("option %s needs a value", name);
        case O_EMPTY_PATH:
            return WC_EXIT_USAGE;
        default:
            return option_error(argv, opts, name, "for export");
        }
    }
    if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
    if (!ckpt || !out) return usage_error("export needs --checkpoint and --out");
    return wc_export_run(ckpt, out);
}

/* Collective: WC_OK when every rank was started with rank 0's command line. Ranks given other
 * options (an MPMD launch, "mpirun -np 1 wildcpu --steps 2 : -np 1 wildcpu --steps 4") would
 * take other steps and wait in other collectives for ever, or train with whose settings? */
static int same_command_everywhere(int argc, char **argv) {
    size_t n = 0; /* the words, each with its NUL, hashed as one text */
    for (int i = 1; i < argc; i++) n += strlen(argv[i]) + 1;
    char *words = WC_ALLOC(n + 1), *at = words;
    for (int i = 1; i < argc; i++) at = stpcpy(at, argv[i]) + 1;
    const uint64_t h = wc_fnv1a64(words, n);
    free(words);
    uint64_t first = h;
    wc_dist_bcast(&first, sizeof first, 0);
    if (h != first)
        wc_error("rank %d was started with another command line than rank 0: every rank must "
                 "run the same command with the same options (an MPMD launch, mpirun ... : ..., "
                 "gives them different ones)",
                 wc_dist_rank());
    return wc_dist_any(h != first) ? WC_ERR : WC_OK;
}

/* Whether the command line runs a command that stops on a signal: train (the default),
 * predict or evaluate. */
static int stops_on_signal(int argc, char **argv) {
    if (argc >= 2 &&
        (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--version")))
        return 0;
    if (argc < 2 || argv[1][0] == '-') return 1;
    return strcmp(argv[1], "train") == 0 || strcmp(argv[1], "predict") == 0 ||
           strcmp(argv[1], "evaluate") == 0;
}

/* Runs before every library's initializer, OpenBLAS's among them (blas_core.h says why). The
 * stop signals are caught from here on: loading and starting MPI's and GDAL's libraries takes
 * most of a second, and a rank signalled then (a job cancelled at its start) died with 143,
 * leaving no DIR/STOPPED for a requeue to see. */
static void settle_blas_threads(int argc, char **argv, char **envp) {
    const int stops = stops_on_signal(argc, argv);
    if (stops) wc_stop_install(), wc_stop_hold(1); /* held across the exec, if any */
    wc_blas_threads_settle(argv, envp);
    if (stops) wc_stop_hold(0); /* also what was held in the process that executed this one */
}
typedef void (*preinit_fn)(int, char **, char **);
static const preinit_fn settle_blas_threads_first __attribute__((section(".preinit_array"), used)) =
    settle_blas_threads;

int main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("%s\n", USAGE);
        return check_stdout(print_help(TRAIN_HELP));
    }
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        if (argc > 2) return usage_error("--version takes nothing after it ('%s')", argv[2]);
        printf("wildcpu %s\n", WC_VERSION);
        stdout_is_the_product = 1;
        return check_stdout(WC_EXIT_OK);
    }
    /* OpenBLAS's kernels are chosen as it loads: a CPU it did not recognize is fixed by
     * executing again, before anything else starts (blas_core.h) */
    const int stops = stops_on_signal(argc, argv);
    if (stops) wc_stop_hold(1); /* across the exec, as in settle_blas_threads */
    wc_blas_core_settle(argv);
    if (stops) wc_stop_hold(0);
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"train", cmd_train},       {"predict", cmd_predict}, {"synth", cmd_synth},
                {"evaluate", cmd_evaluate}, {"info", cmd_info},       {"export", cmd_export}};
    int (*fn)(int, char **) = cmd_train;
    int shift = 0;
    if (argc >= 2 && argv[1][0] != '-') {
        fn = NULL;
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
            if (strcmp(argv[1], cmds[i].name) == 0) fn = cmds[i].fn;
        if (!fn) return usage_error("unknown command '%s'", argv[1]);
        shift = 1;
    }
    /* again (installed before the libraries started: settle_blas_threads), so that nothing a
     * library's initializer did replaces it; before MPI starts, so a signal is not lost */
    if (fn == cmd_train || fn == cmd_predict || fn == cmd_evaluate) wc_stop_install();
    wc_address_space_settle(); /* before MPI's threads start */
    if (wc_dist_init(&argc, &argv) != WC_OK) {
        wc_dist_finalize();
        return WC_EXIT_RUNTIME;
    }
    if (same_command_everywhere(argc, argv) != WC_OK) {
        wc_dist_finalize();
        return WC_EXIT_USAGE;
    }
    (void)wc_progress_seconds(); /* WILDCPU_PROGRESS_SECONDS read, and warned about, once */
    int status = check_stdout(fn(argc - shift, argv + shift));
    /* A usage error on rank 0 is one on every rank: the parsing is the same everywhere. */
    wc_dist_finalize();
    return status;
}
