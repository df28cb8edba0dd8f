/* stop.c: the stop-signal flag; see stop.h. The handler uses only async-signal-safe calls
 * (clock_gettime is, in POSIX.1-2008) and writes sig_atomic_t flags and the first signal's time;
 * it runs with every other signal blocked, so one stop signal's handler never interrupts
 * another's half-way through that time. */
#include "wildcpu/stop.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested = 0;
static volatile sig_atomic_t stop_signal = 0;
static struct timespec stop_time;

/* A signal within this many seconds of the first is the same stop delivered twice: timeout(1)
 * signals its command and then its own process group, which holds the command too. */
#define SAME_STOP_SECONDS 1.0

static void on_stop_signal(int sig) {
    if (stop_requested && sig == SIGUSR1) return;
    if (stop_requested) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        const double since = (double)(now.tv_sec - stop_time.tv_sec) +
                             1e-9 * (double)(now.tv_nsec - stop_time.tv_nsec);
        if (since < SAME_STOP_SECONDS) return;
        static const char msg[] = "wildcpu: second stop signal: exiting at once\n";
        ssize_t rc = write(2, msg, sizeof msg - 1);
        (void)rc;
        _exit(128 + sig);
    }
    clock_gettime(CLOCK_MONOTONIC, &stop_time);
    stop_signal = sig;
    stop_requested = 1;
}

void wc_stop_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* A hang-up (the ssh session or terminal of an interactive run closed) is a stop too, so
     * the run keeps its steps; unless it was ignored when we started (nohup asks for exactly
     * that, and gets it). */
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN)
        sigaction(SIGHUP, &sa, NULL);
    /* A file-size limit (ulimit -f) must surface as a write error we report, with the previous
     * checkpoint or map intact, not as a signal that kills the process mid-write. */
    signal(SIGXFSZ, SIG_IGN);
    /* A closed reader of stdout (`wildcpu ... | head -1`) must not kill a run mid-write,
     * leaving no report and, in predict, a temporary file: the lines then go nowhere. */
    signal(SIGPIPE, SIG_IGN);
}

void wc_stop_hold(int hold) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

int wc_stop_requested(void) {
    return stop_requested;
}

int wc_stop_signal(void) {
    return stop_signal;
}

double wc_stop_seconds_since(void) {
    if (!stop_requested) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - stop_time.tv_sec) +
           1e-9 * (double)(now.tv_nsec - stop_time.tv_nsec);
}

void wc_stop_ignore_further(void) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
}

/* The origin the ranks agreed on (wc_dist_agree_stop_origin): the lowest rank with a stop
 * signal, and that signal. */
static int origin_rank = -1, origin_signal = 0;

void wc_stop_set_origin(int rank, int sig) {
    origin_rank = rank, origin_signal = sig;
}

const char *wc_stop_origin(char *buf, size_t len, const char *unknown) {
    if (stop_signal)
        snprintf(buf, len, "%s", strsignal(stop_signal));
    else if (origin_rank >= 0)
        snprintf(buf, len, "%s on rank %d", strsignal(origin_signal), origin_rank);
    else
        snprintf(buf, len, "%s", unknown);
    return buf;
}
