/* replay.c: runs a fuzz target's LLVMFuzzerTestOneInput on saved inputs, without libFuzzer (the
 * usual StandaloneFuzzTargetMain), in the normal and the sanitizer builds.
 *
 *   test_fuzz_TARGET [FILE|DIR]...   each file, or each regular file of each directory
 *
 * Without arguments it replays the target's committed seeds and regression inputs
 * ($WILDCPU_ROOT/tests/fuzz/{seeds,regress}/TARGET, REPLAY_TARGET set by the Makefile) and prints
 * one "ok - ..." line per directory for tests/run. An input that crashes ends the program
 * (a sanitizer report or an abort), and the file's name was printed just before.
 *
 * Not here: finding inputs (make fuzz), or judging outputs (a target returns nothing). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return perror(path), -1;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap), *more;
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        if ((n += got) < cap) continue;
        if (!(more = realloc(buf, cap *= 2))) free(buf);
        buf = more;
    }
    fclose(f);
    if (!buf) return fprintf(stderr, "%s: out of memory\n", path), -1;
    fprintf(stderr, "# replaying %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays path (a file, or a directory's files in name order); returns the count or -1. */
static int replay(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return perror(path), -1;
    if (!S_ISDIR(st.st_mode)) return replay_file(path) == 0 ? 1 : -1;
    DIR *d = opendir(path);
    if (!d) return perror(path), -1;
    char **names = NULL;
    int n = 0, done = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md")) continue;
        names = realloc(names, sizeof(char *) * (n + 1));
        names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
        sprintf(names[n++], "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n > 1) qsort(names, (size_t)n, sizeof(char *), by_name); /* names is NULL for none */
    for (int i = 0; i < n; i++) {
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            done = done >= 0 && replay_file(names[i]) == 0 ? done + 1 : -1;
        free(names[i]);
    }
    free(names);
    return done;
}

int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    int failed = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++) failed |= replay(argv[i]) < 0;
        return failed;
    }
    const char *root = getenv("WILDCPU_ROOT") ? getenv("WILDCPU_ROOT") : ".";
    static const char *const kinds[] = {"seeds", "regress"};
    for (int k = 0; k < 2; k++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", root, kinds[k], REPLAY_TARGET);
        int n = replay(dir);
        /* no seeds would make this test pass without testing anything; regress/ holds only
         * what the fuzzer found, and may be empty (but must exist: it has a README.md) */
        int ok = k == 0 ? n > 0 : n >= 0;
        printf("%s - %s replays tests/fuzz/%s/%s (%d inputs)\n", ok ? "ok" : "not ok",
               REPLAY_TARGET, kinds[k], REPLAY_TARGET, n);
        fflush(stdout);
        failed |= !ok;
    }
    return failed;
}
