/* test_files.c: the local file behind a GDAL dataset name (wc_file_behind), and what it serves:
 * pipes found behind archive paths and connection strings (wc_special_file_kind), and names made
 * absolute for records (wc_path_absolute); claims on an output (wc_claim_output) by processes
 * that arrive together. Real files, pipes, directories and processes in a temporary directory,
 * which is the working directory while the tests run. */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wildcpu/files.h"
#include "wildcpu/util.h"

static char dir[4096];

static void touch(const char *path) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "create %s", path);
    if (f) fclose(f);
}

/* what wc_file_behind finds in name, as a string ("" for nothing) */
static const char *behind(const char *name) {
    static char out[4096];
    char *p = wc_file_behind_dup(name);
    snprintf(out, sizeof out, "%s", p ? p : "");
    free(p);
    return out;
}

static void test_file_behind(void) {
    touch("f.gpkg");
    touch("a:b.tif"); /* a file whose name holds ':' is found whole */
    touch("f.nc");
    touch("t.zip");
    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    touch("d/in.zip");
    static const struct {
        const char *name, *want;
    } cases[] = {
        {"GPKG:f.gpkg:table", "f.gpkg"},
        {"NETCDF:\"f.nc\":var", "f.nc"},
        {"GTIFF_DIR:1:a:b.tif", "a:b.tif"},
        {"/vsizip/t.zip/x/tiles.vrt", "t.zip"},
        {"/vsizip/d/in.zip/tiles.vrt", "d/in.zip"},
        {"/vsigzip/t.zip", "t.zip"},
        {"f.gpkg", ""},               /* a file itself */
        {"a:b.tif", ""},              /* a file itself, ':' and all */
        {"GPKG:gone.gpkg:table", ""}, /* nothing there */
        {"GPKG:d:table", ""},         /* a directory is not a file */
        {"/vsicurl/http://h/x.tif", ""},
        {"/vsimem/x.tif", ""},
        {"PG:dbname=x", ""},
        {"", ""},
        {":f.gpkg", ""}, /* no driver name */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(strcmp(behind(cases[i].name), cases[i].want) == 0, "%s: '%s', want '%s'",
              cases[i].name, behind(cases[i].name), cases[i].want);
    /* absolute: /vsizip//ABS/t.zip/x */
    char abs[4200];
    snprintf(abs, sizeof abs, "/vsizip/%s/t.zip/x.vrt", dir);
    char want[4200];
    snprintf(want, sizeof want, "%s/t.zip", dir);
    CHECK(strcmp(behind(abs), want) == 0, "%s: '%s'", abs, behind(abs));
}

static void test_pipes_behind_names(void) {
    CHECK(mkfifo("p.gpkg", 0600) == 0, "mkfifo p.gpkg");
    CHECK(mkfifo("q.gz", 0600) == 0, "mkfifo q.gz");
    const char *pipe = "a pipe (FIFO)";
    const char *k;
    CHECK((k = wc_special_file_kind("p.gpkg")) && strcmp(k, pipe) == 0, "p.gpkg");
    CHECK((k = wc_special_file_kind("GPKG:p.gpkg:x")) && strcmp(k, pipe) == 0, "GPKG:p.gpkg:x");
    CHECK((k = wc_special_file_kind("/vsigzip/q.gz")) && strcmp(k, pipe) == 0, "/vsigzip/q.gz");
    CHECK(wc_special_file_kind("GPKG:f.gpkg:x") == NULL, "a GeoPackage is a file");
    CHECK(wc_special_file_kind("GPKG:gone.gpkg:x") == NULL, "nothing behind");
}

static void test_path_absolute(void) {
    static const struct {
        const char *path, *want; /* want: %s is the working directory */
    } cases[] = {
        {"f.gpkg", "%s/f.gpkg"},
        {"./f.gpkg", "%s/f.gpkg"},
        {"gone.tif", "%s/gone.tif"},
        {"/abs/x.tif", "/abs/x.tif"},
        {"GPKG:f.gpkg:table", "GPKG:%s/f.gpkg:table"},
        {"NETCDF:\"f.nc\":var", "NETCDF:\"%s/f.nc\":var"},
        {"/vsizip/t.zip/x.vrt", "/vsizip/%s/t.zip/x.vrt"},
        {"/vsizip/d/in.zip/x.vrt", "/vsizip/%s/d/in.zip/x.vrt"},
        {"/vsimem/x.tif", "/vsimem/x.tif"},
        {"GPKG:gone.gpkg:t", "GPKG:gone.gpkg:t"}, /* nothing behind it: as given */
        {"PG:dbname=x", "PG:dbname=x"},
        {"/vsicurl/https://h/x.tif", "/vsicurl/https://h/x.tif"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[8400], want[8400];
        wc_path_absolute(cases[i].path, got, sizeof got);
        snprintf(want, sizeof want, cases[i].want, dir);
        CHECK(strcmp(got, want) == 0, "%s: '%s', want '%s'", cases[i].path, got, want);
    }
}

/* realpath as the library calls it, counted: resolving a path takes a readlink per component,
 * and a run compares each file of its mosaic with each of its outputs. */
static long realpath_calls;
char *realpath(const char *restrict path, char *restrict resolved) {
    static char *(*real)(const char *restrict, char *restrict);
    if (!real) real = (char *(*)(const char *restrict, char *restrict))dlsym(RTLD_NEXT, "realpath");
    realpath_calls++;
    return real(path, resolved);
}

/* A mosaic of 300 files against a run's 12 outputs, none written yet: no pair resolves a path
 * (a file that exists is not one that does not; 3 realpath calls a pair made a run over 1,024
 * tiles spend 3.5 s on it), and what names an input is still refused: another spelling of it,
 * a link to it, and a path through a linked directory to a file neither has yet. */
static void test_outputs_not_inputs(void) {
    enum { NIN = 300, NOUT = 12 };
    CHECK(mkdir("mosaic", 0755) == 0 && mkdir("run", 0755) == 0, "mkdir");
    CHECK(symlink("run", "runlink") == 0, "symlink");
    static char in_paths[NIN][32], out_paths[NOUT][32];
    const char *inputs[NIN + 1], *outputs[NOUT], *whats[NOUT];
    for (int i = 0; i < NIN; i++) {
        snprintf(in_paths[i], sizeof in_paths[i], "mosaic/t%03d.tif", i);
        touch(in_paths[i]);
        inputs[i] = in_paths[i];
    }
    inputs[NIN] = NULL;
    for (int i = 0; i < NOUT; i++) {
        snprintf(out_paths[i], sizeof out_paths[i], "run/out%02d.tif", i);
        outputs[i] = out_paths[i], whats[i] = "an output";
    }
    realpath_calls = 0;
    CHECK(wc_check_outputs_not_inputs(outputs, whats, NOUT, NULL, 0, inputs) == WC_OK,
          "distinct files refused");
    CHECK(realpath_calls <= NOUT, "%ld realpath calls for %d inputs and %d outputs", realpath_calls,
          NIN, NOUT);
    const char *same[] = {"./mosaic/../mosaic/t007.tif", NULL};
    const char *one[] = {"mosaic/t007.tif"}, *what[] = {"the map"};
    CHECK(wc_check_outputs_not_inputs(one, what, 1, NULL, 0, same) == WC_ERR,
          "another spelling of an input taken as an output");
    CHECK(symlink("mosaic/t008.tif", "t8link.tif") == 0, "symlink");
    const char *linked[] = {"t8link.tif", NULL}, *eight[] = {"mosaic/t008.tif"};
    CHECK(wc_check_outputs_not_inputs(eight, what, 1, NULL, 0, linked) == WC_ERR,
          "a link to an input taken as an output");
    const char *future[] = {"runlink/new.tif", NULL}, *newmap[] = {"run/new.tif"};
    CHECK(wc_check_outputs_not_inputs(newmap, what, 1, NULL, 0, future) == WC_ERR,
          "a file neither has yet, through a linked directory, taken as two");
    CHECK(!wc_same_file("mosaic/t001.tif", "run/none.tif"), "a file and one not there alike");
    CHECK(wc_same_file("run/none.tif", "runlink/none.tif"), "a file not there, two spellings");
}

/* A process named wildcpu (what wc_output_writer looks for) that waits on `start` (until it
 * closes), claims path, writes what wc_claim_output returned to `result` and holds its claim
 * until `hold` closes. */
static pid_t claimant(const char *path, const int start[2], const int result[2],
                      const int hold[2]) {
    fflush(stdout); /* not written twice by the child's exit */
    const pid_t pid = fork();
    if (pid != 0) return pid;
    close(start[1]), close(result[0]), close(hold[1]); /* the parent's ends: EOF when it closes */
    prctl(PR_SET_NAME, "wildcpu");
    if (!freopen("claims.err", "a", stderr)) _exit(2); /* what it says, for the parent to read */
    char c;
    while (read(start[0], &c, 1) > 0) {
    }
    const long got = wc_claim_output(path);
    if (write(result[1], &got, sizeof got) != (ssize_t)sizeof got) _exit(2);
    while (read(hold[0], &c, 1) > 0) {
    }
    exit(0); /* its claim is removed at exit */
}

/* Of two processes claiming one output at the same moment, exactly one holds the claim and the
 * other is given its pid: never both (each would publish its own files, the last rename of each
 * winning) and never neither (each seeing the other's claim made both refuse), and no working
 * file of a killed run is said (a claim removed while the other looked). Many rounds, the two
 * released together by closing one pipe. */
static void test_claim_race(void) {
    int both = 0, neither = 0, wrong = 0;
    for (int round = 0; round < 40; round++) {
        char path[64];
        snprintf(path, sizeof path, "race%d.tif", round);
        int start[2], result[2], hold[2];
        if (pipe(start) || pipe(result) || pipe(hold)) {
            CHECK(0, "pipe");
            return;
        }
        pid_t pid[2];
        for (int i = 0; i < 2; i++) pid[i] = claimant(path, start, result, hold);
        close(start[0]), close(result[1]), close(hold[0]);
        close(start[1]); /* both go */
        long got[2] = {-1, -1};
        for (int i = 0; i < 2; i++)
            if (read(result[0], &got[i], sizeof got[i]) != (ssize_t)sizeof got[i]) got[i] = -1;
        close(hold[1]);
        close(result[0]);
        for (int i = 0; i < 2; i++) waitpid(pid[i], NULL, 0);
        if (got[0] == 0 && got[1] == 0)
            both++;
        else if (got[0] != 0 && got[1] != 0)
            neither++;
        else if ((got[0] ? got[0] : got[1]) != pid[0] && (got[0] ? got[0] : got[1]) != pid[1])
            wrong++;
    }
    CHECK(both == 0 && neither == 0 && wrong == 0,
          "of 40 rounds, both claimed in %d, neither in %d, another pid given in %d", both, neither,
          wrong);
    struct stat st;
    CHECK(stat("claims.err", &st) != 0 || st.st_size == 0,
          "the claimants said something: see %s/claims.err", dir);
    glob_t left;
    CHECK(glob(".race*", 0, NULL, &left) == GLOB_NOMATCH,
          "%zu claims left after their holders "
          "ended, the first %s",
          left.gl_pathc, left.gl_pathc ? left.gl_pathv[0] : "");
    globfree(&left);
}

int main(void) {
    char tmp[64];
    if (harness_tempdir(tmp, sizeof tmp, "wildcpu-test-files.") != 0 || chdir(tmp) != 0 ||
        !getcwd(dir, sizeof dir))
        return 1;
    RUN(test_file_behind);
    RUN(test_pipes_behind_names);
    RUN(test_path_absolute);
    RUN(test_claim_race);
    RUN(test_outputs_not_inputs);
    harness_remove_tree(dir);
    HARNESS_EXIT();
}
