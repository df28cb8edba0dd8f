/* stop.h: stop signals (SIGTERM, SIGUSR1, SIGINT, SIGHUP unless ignored at start, as under
 * nohup), shared by training and prediction.
 *
 * A signal only sets a flag; the long-running loops look at it at their own boundaries (a
 * training step, a prediction round) and all ranks agree through a collective they already
 * make, so they stop together even when only some ranks got the signal. A repeated SIGUSR1 is
 * ignored (Slurm's time-limit warning and a user's scancel may both send one); a second
 * SIGTERM, SIGINT or SIGHUP ends the process at once, unless it comes within a second of the
 * first (the same stop delivered twice: timeout(1) signals its command, then its process
 * group). main installs the handlers before the libraries start, so a signal during start-up
 * is not lost. */
#ifndef WILDCPU_STOP_H
#define WILDCPU_STOP_H

#include <stddef.h>

void wc_stop_install(void);
/* hold 1: the stop signals wait (blocked) across an execve of the program by itself, whose
 * start would otherwise meet them with their default action (the process killed, 143); hold
 * 0: they are delivered again, one that came meanwhile now, to the handlers. */
void wc_stop_hold(int hold);
/* 1 once a stop signal has arrived on this process */
int wc_stop_requested(void);
/* the first stop signal's number, 0 if none */
int wc_stop_signal(void);
/* seconds since the first stop signal (0 if none) */
double wc_stop_seconds_since(void);
/* The stop is done: further stop signals (a launcher's clean-up after the first rank exits)
 * are ignored rather than turning an orderly exit into a "second signal" one. */
void wc_stop_ignore_further(void);
/* The lowest rank a stop signal reached and its signal, as the ranks agreed on them
 * (wc_dist_agree_stop_origin), for wc_stop_origin's messages. */
void wc_stop_set_origin(int rank, int sig);
/* The signal that stopped the run, for a message: "Terminated" on the rank it reached,
 * "Terminated on rank 2" on the others once the ranks agreed on its origin, else `unknown`. buf
 * is returned. */
const char *wc_stop_origin(char *buf, size_t len, const char *unknown);

#endif
