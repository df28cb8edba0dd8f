/* harness.h: the tiny test harness every C test uses.
 *
 * A test is a function `static void test_xxx(void)` that uses CHECK; RUN(test_xxx) runs it and
 * prints one line, "ok - test_xxx" or "not ok - test_xxx", which tests/run counts. A test
 * binary's exit status is the number of failed tests (capped), so it also fails on its own. */
#ifndef WILDCPU_TEST_HARNESS_H
#define WILDCPU_TEST_HARNESS_H

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int harness_failed_checks = 0;
static int harness_failed_tests = 0;
static int harness_run_tests = 0;

/* CHECK(cond, fmt, ...): on failure prints where and why, and fails the current test. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stdout, "#   %s:%d: check `%s' failed: ", __FILE__, __LINE__, #cond);          \
            fprintf(stdout, __VA_ARGS__);                                                          \
            fputc('\n', stdout);                                                                   \
            harness_failed_checks++;                                                               \
        }                                                                                          \
    } while (0)

/* NOTE(fmt, ...): a diagnostic line (measured errors and the like), shown in the test log. */
#define NOTE(...)                                                                                  \
    do {                                                                                           \
        fprintf(stdout, "#   ");                                                                   \
        fprintf(stdout, __VA_ARGS__);                                                              \
        fputc('\n', stdout);                                                                       \
    } while (0)

#define RUN(fn)                                                                                    \
    do {                                                                                           \
        int before_ = harness_failed_checks;                                                       \
        fn();                                                                                      \
        harness_run_tests++;                                                                       \
        if (harness_failed_checks == before_) {                                                    \
            fprintf(stdout, "ok - %s\n", #fn);                                                     \
        } else {                                                                                   \
            fprintf(stdout, "not ok - %s\n", #fn);                                                 \
            harness_failed_tests++;                                                                \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

#define HARNESS_EXIT() return harness_failed_tests > 100 ? 100 : harness_failed_tests

/* Relative error |a-b| / max(|a|, |b|, floor): the measure the gradient tests report. */
static inline double rel_err(double a, double b, double floor_) {
    double d = fabs(a - b), s = fmax(fmax(fabs(a), fabs(b)), floor_);
    return d / s;
}

/* A fresh directory /tmp/PREFIXXXXXXX for a test binary's files, its name written into dir:
 * 0, or -1 after a "not ok" line (which fails the binary). */
static inline int harness_tempdir(char *dir, size_t size, const char *prefix) {
    snprintf(dir, size, "/tmp/%sXXXXXX", prefix);
    if (mkdtemp(dir)) return 0;
    printf("not ok - mkdtemp %s\n", dir);
    return -1;
}

static inline int harness_remove_entry(const char *path, const struct stat *st, int flag,
                                       struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes dir and everything below it, links not followed (rm -rf without a shell, so any name
 * will do); a NOTE when something stays. */
static inline void harness_remove_tree(const char *dir) {
    if (nftw(dir, harness_remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        NOTE("could not remove %s", dir);
}

#endif
