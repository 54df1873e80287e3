// train/stop.c — ending a run early: signal handlers that only set a flag, the all-reduce that turns one rank's flag into every rank's, and the --stop-loss window.
#include "train/stop.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"

static volatile sig_atomic_t g_signal;   // the first stop signal this process got, 0 for none

static void on_signal(int signo) {
    if (g_signal && signo == SIGINT) {   // a second Ctrl-C: the user will not wait for the step
        static const char msg[] = "ringgpt: second interrupt: stopping now, without a checkpoint (the last one stays)\n";
        ssize_t k = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)k;
        _exit(128 + SIGINT);
    }
    if (!g_signal) g_signal = signo;
}

void stop_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;   // reads and writes go on; the loop looks at the flag between steps
    sigemptyset(&sa.sa_mask);
    const int signals[] = {SIGINT, SIGTERM, SIGUSR1};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (sigaction(signals[i], &sa, NULL) != 0) fail("cannot install the handler for %s", stop_signal_name(signals[i]));
}

int stop_agree(Comm *world) {
    double signo = g_signal;
    comm_allreduce(world, &signo, 1, COMM_F64, COMM_MAX, "stop request");
    return (int)signo;
}

const char *stop_signal_name(int signo) {
    switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
    }
}

void loss_stop_init(LossStop *s, double limit, int window) {
    *s = (LossStop){.limit = limit, .window = window};
    if (limit > 0) s->losses = xcalloc((size_t)window, sizeof *s->losses, "--stop-window losses");
}

bool loss_stop_add(LossStop *s, double loss, double *mean) {
    if (!s->losses) return false;
    s->losses[s->seen++ % s->window] = loss;
    if (s->seen < s->window) return false;
    double sum = 0;   // summed afresh each step: no drift from adding and taking away
    for (int i = 0; i < s->window; i++) sum += s->losses[i];
    *mean = sum / s->window;
    return *mean <= s->limit;
}

void loss_stop_free(LossStop *s) {
    free(s->losses);
    s->losses = NULL;
}
