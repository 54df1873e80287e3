// tests/core/test_comm_progress.c — what moves a started exchange while the ranks compute: under Open MPI's TCP transport
// (the test's environment forces it) a 16 MiB sendrecv pair completes in memory while both ranks only read their receive
// buffer, with the progress thread (no MPI call at all) and with comm_poke() between the reads (the compute loops' way);
// then comm_wait finds every byte. With neither the same exchange is reported (not asserted: another MPI may progress on
// its own).
// Usage: mpiexec -np 2 test_comm_progress
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm.h"
#include "core/common.h"
#include "tests/check.h"

enum { BYTES = 16 << 20 };

// The byte at offset i of what rank r sends.
static unsigned char pattern(int r, size_t i) { return (unsigned char)(i * 31 + (size_t)r * 7 + 1); }

// True once the receive buffer holds all of rank `from`'s pattern; reads memory only (no MPI call).
static bool arrived(const volatile unsigned char *buf, int from) {
    for (size_t i = 0; i < BYTES; i += 4093)
        if (buf[i] != pattern(from, i)) return false;
    return buf[BYTES - 1] == pattern(from, BYTES - 1);
}

// Starts the exchange under `mode` and watches the receive buffer for up to `seconds`, calling only comm_poke (when
// `poke`) between the looks; returns whether it filled. comm_wait then finishes the exchange (and checks every byte).
static bool exchange(Comm *w, CommProgress mode, bool poke, double seconds) {
    comm_set_progress(mode);
    int r = comm_rank(w), peer = 1 - r;
    unsigned char *send = xmalloc(BYTES, "send"), *recv = xcalloc(BYTES, 1, "recv");
    for (size_t i = 0; i < BYTES; i++) send[i] = pattern(r, i);
    comm_barrier(w, "exchange start");
    CommRequest q;
    comm_sendrecv_start(w, &q, send, BYTES, peer, recv, BYTES, peer, "progress test exchange");
    double t0 = now_seconds();
    bool filled = false;
    while (!(filled = arrived(recv, peer)) && now_seconds() - t0 < seconds) {
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
        if (poke) comm_poke();
    }
    comm_wait(&q);
    size_t bad = 0;
    for (size_t i = 0; i < BYTES; i++) bad += recv[i] != pattern(peer, i);
    CHECK(bad == 0, "rank %d: %zu bytes differ after comm_wait", r, bad);
    free(send), free(recv);
    return filled;
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(120);
    Comm *w = comm_world();
    if (comm_size(w) != 2) fail_usage("test_comm_progress: run it on 2 ranks (mpiexec -np 2)");
    // Generous: at the slowest a loaded machine moves 16 MiB over loopback TCP in well under a second.
    double got[3] = {exchange(w, COMM_PROGRESS_THREAD, false, 60), exchange(w, COMM_PROGRESS_COMPUTE, true, 60), 0};
    CHECK(comm_progress_running() == false, "the progress thread still runs under COMM_PROGRESS_COMPUTE");
    got[2] = exchange(w, COMM_PROGRESS_OFF, true, 2);   // comm_poke does nothing here
    comm_allreduce(w, got, 3, COMM_F64, COMM_MIN, "progress results");
    CHECK(got[0] == 1, "with the progress thread the exchange did not complete while the ranks made no MPI call");
    CHECK(got[1] == 1, "with comm_poke between the looks the exchange did not complete");
    log_info("%s: 16 MiB exchange over TCP while no rank calls MPI: completed with the progress thread and with comm_poke; "
             "with neither: %s\n", check_failed ? "FAIL" : "ok",
             got[2] == 1 ? "completed too (this MPI progresses on its own)" : "did not move");
    comm_finalize();
    return check_failed ? 1 : 0;
}
