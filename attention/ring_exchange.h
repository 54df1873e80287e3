// attention/ring_exchange.h — the pairwise exchange of any layout but the zigzag: which K/V rows go where at each step, the
// block calls between, and their order; for attention/ring.c (which runs it) and attention/ring_model.c (which times it).
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "attention/ring_schedule.h"

// Rows [a, a + n) of one rank's local order.
typedef struct {
    int a, n;
} ExRows;

// One block call on received keys, ATTN_FULL: packet rows [k0, k0 + nk), which are the sender's local rows [ks, ks + nk),
// against this rank's rows [q0, q0 + nq). No row of ours lies between the keys' positions, so every key precedes every
// query; the queries end at our last row of the keys' last document.
typedef struct {
    int k0, ks, nk, q0, nq;
} ExTask;

// Step s (1 ≤ s < W) of rank r: it sends to `to` = r + s (mod W) the n_send rows of its own that `to` reads, packed in
// order (the runs), and receives from `from` = r − s the n_recv rows of `from` that it reads, computed as the tasks.
// The backward sends the received rows' dK/dV back to `from` and receives its own rows' from `to` (packed as sent).
typedef struct {
    int to, from;
    int n_send, n_recv;
    int run0, n_runs;     // runs[run0 ..]: our rows packed for `to`
    int task0, n_tasks;   // tasks[task0 ..]: the block calls on `from`'s rows
} ExStep;

// Rank r's plan for one layout. A key row of rank j (document d, position p) is read by rank q ≠ j when q holds a row
// of d at a position after p; both ends of a step compute the same lists from the layout, so no count travels.
typedef struct {
    int W, r, L;
    ExStep *steps;   // (W): steps[1 .. W−1]
    ExRows *runs;
    ExTask *tasks;
    int n_runs, n_tasks;
    int *rows;       // (L) scratch: the rows of one rank another reads
    int32_t *seen;   // (W·L) scratch: the layout's check
    int cap_W, cap_L;
} ExPlan;

// True when pos (W, L) is the zigzag (rank j: chunk j, then chunk 2·W−1−j, of L/2 positions each; NULL is the zigzag):
// the layout the ring runs instead of the exchange.
bool ex_is_zigzag(const int32_t *pos, int W, int L);

// Rank r's plan: pos (W, L) the global positions each rank holds, ascending, at pos + j·L; docs (W, L) their document
// ids in the same order (non-decreasing with position: ids of document starts), NULL for one document. Fails with a
// message when pos is not a permutation of 0..W·L−1 ascending per rank or the ids fall with position. The plan's
// arrays grow to the largest layout and are kept for the next call.
void ex_plan(ExPlan *p, const int32_t *pos, const int32_t *docs, int W, int r, int L);
void ex_plan_free(ExPlan *p);

// The exchange's order of operations, written once. start(KV, s): our rows leave for steps[s].to while `from`'s arrive;
// start(ACC, s): the dK/dV of `from`'s rows go back to it while those of ours come from `to`. Every rank runs every step
// in the same order, empty ones included (they post nothing), so the messages between two ranks match in order.
// task(s, t): s = 0 is the own block, one ATTN_CAUSAL call of all L rows (ascending positions: local causality is
// global causality; the document ids mask the rest), else steps[s]'s task t, ATTN_FULL.
typedef struct ExSched ExSched;
struct ExSched {
    const ExPlan *plan;
    bool overlap;   // false: every exchange is waited for right after it starts (the serial baseline)
    void (*start)(ExSched *x, PieceKind kind, int s);
    void (*wait)(ExSched *x, PieceKind kind, int s);
    void (*task)(ExSched *x, int s, const ExTask *t, bool backward);
};

// The own block while step 1's rows move; at each step, the next step's rows start before this one's blocks. Backward:
// the same, and after a step's blocks its dK/dV start back while the previous step's, waited for then, join this
// rank's dk, dv in step order (a fixed order: deterministic sums).
void ex_schedule(ExSched *x, bool backward);
