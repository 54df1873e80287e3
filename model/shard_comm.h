// model/shard_comm.h — a model sharded in one call, and the sharded step's collectives: a unit's weights gathered before it runs, its gradients reduce-scattered after its backward, the weights gathered after an update.
#pragma once
#include "core/comm.h"
#include "model/adamw.h"
#include "model/gpt.h"

// One rank's seconds of gathers and reduce-scatters: comm_s while at least one was in flight (from a start until
// seen done: tested at every unit boundary and in every wait, so a bound from above), wait_s blocked on them;
// 1 - wait_s / comm_s of that time was hidden behind compute.
typedef struct {
    double comm_s, wait_s;
} ShardTimes;

// Two gathered units (the one running and the next, gathered while it runs: forward 0 .. n_layer + 1, backward back
// down) and two gradient buffers (the unit whose backward runs, and the one before it, reduce-scattered meanwhile).
// With tied embeddings the head reads the embeddings' weights and adds to their gradient, so unit 0 has a third slot
// and a third gradient buffer of its own, held from its forward (gradients: from the head's backward) to its backward.
typedef struct {
    GptUnitHook hook;       // m->unit_hook from SHARD_GRADS on (first member)
    GPT *m;
    Comm *comm;             // every rank of the job (device-aware)
    const ShardLayout *s;
    real *wbuf[3];          // (m->sizes.unit_weights[k]) a unit's gathered weights; [2]: unit 0's when tied (else NULL)
    int wunit[3];           // the unit wbuf[k] holds or is being gathered into (-1: none)
    CommRequest wreq[3];
    real *gbuf[3];          // (m->sizes.unit_grads[k]) a unit's gradients: its backward writes one while the other is reduce-scattered;
                            // [2]: unit 0's when tied (else NULL)
    real *slice[2];         // (m->sizes.pad) the rank's slice of a reduce-scatter; the padded send of a gather after an update
    int gunit[2];           // the unit whose reduce-scatter gbuf[k] is in (-1: none)
    CommRequest greq[2];
    int gnext;              // the gradient buffer the next backward unit takes
    ShardTimes times;
    int in_flight;          // collectives started and not yet seen done
    double busy_since;      // when in_flight last rose from 0
    double busy_until;      // the latest end (CommRequest.done_at) of the collectives finished since
} ShardComm;

// Shards m (gpt_init's GPT_SHARDED; GPT_TRAIN at SHARD_NONE, then AdamW alone) at `level` over every rank of `world`:
// the layout and this rank's slices (gpt_shard), AdamW's moments on them (opt, cfg) and in sc the collectives between
// them (m->unit_hook from SHARD_GRADS on); a resume then fills the slices. Freed by adamw_free, shard_comm_free, gpt_free.
void shard_model(ShardComm *sc, GPT *m, AdamW *opt, AdamWConfig cfg, ShardLevel level, Comm *world);
void shard_comm_free(ShardComm *sc);
// After the step's last backward: every reduce-scatter finished and its slice added into m->grads (SHARD_GRADS on).
void shard_comm_finish_grads(ShardComm *sc);
// After adamw_update: SHARD_OPTIM and SHARD_GRADS gather every unit's updated weights into m->params; SHARD_PARAMS
// drops the gathered copies (stale now).
void shard_comm_after_update(ShardComm *sc);
// The times since the last call; shard_comm_waited: their wait_s so far.
ShardTimes shard_comm_take_times(ShardComm *sc);
double shard_comm_waited(const ShardComm *sc);
