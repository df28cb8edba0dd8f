/* harness.h: the tiny test harness every C test uses.
 *
 * A test is a function `static void test_xxx(void)` that uses CHECK; RUN(test_xxx) runs it and
 * prints one line, "ok - test_xxx" or "not ok - test_xxx", which tests/run counts. A test
 * binary's exit status is the number of failed tests (capped), so it also fails on its own. */
#ifndef WILDCPU_TEST_HARNESS_H
#define WILDCPU_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
