// attention/sdpa_plan.h — cuDNN fused attention per ring block, host side: which block calls it runs, their tensors' shapes and strides, the cache of built graphs (plain C: tested on the CPU).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

typedef enum { SDPA_FORWARD, SDPA_BACKWARD } SdpaDir;

// A tensor in cuDNN's (b, h, s, d) order: dims and strides in elements.
typedef struct {
    int64_t dim[4], stride[4];
} SdpaTensor;

// One graph: a block call's direction, shape and mask, and the layout of every tensor it touches. The block
// API's tensors are token-major (core/backend.h): q, o, dout, dq (nq, H, hd) and k, v, dk, dv (nk, Hkv, hd) are
// BSHD views with row stride H·hd (Hkv·hd); a Q block that is the second half of a rank's rows (the ring's
// j > r step) is the same view at a later pointer. The softmax statistics are one fp32 per (head, row) in a
// (H, nq) scratch that attention/attention_cudnn.cu converts to and from the block API's (nq, H) LSE.
typedef struct {
    SdpaDir dir;
    int H, Hkv, hd, nq, nk;
    bool causal;                 // q row i sees keys j <= i (top-left diagonal; nq == nk)
    float scale;                 // 1/sqrt(hd), as the hand-written kernels use
    SdpaTensor q, kv, stats;     // q's view is also o's, dout's and dq's; kv's also v's, dk's and dv's
} SdpaPlan;

// NULL when cuDNN's fused attention runs this block call, else why not (the caller runs the hand-written
// kernels): head dims 64 and 128, no document ids (cuDNN's masks do not express them), H a multiple of Hkv.
const char *sdpa_unsupported(const AttnShape *s, int nq, int nk, AttnMask mask, bool docs);
// The plan of a block call sdpa_unsupported accepts.
SdpaPlan sdpa_plan(const AttnShape *s, int nq, int nk, AttnMask mask, SdpaDir dir);
bool sdpa_plan_equal(const SdpaPlan *a, const SdpaPlan *b);
// cuDNN's deterministic backward keeps one partial dQ per 128-key tile: nq·H·hd·4·⌈nk/128⌉ bytes of workspace
// (96 GiB for one 65536-token block at H·hd = 768, measured on an H100). A backward block call whose workspace
// would pass SDPA_BWD_WORKSPACE_MIB runs as square sub-blocks of the returned size (a power of two, >= 256); a
// call that fits gets max(nq, nk). `forced` > 0 (the test hook RINGGPT_CUDNN_BWD_TILE) is taken as it is.
enum { SDPA_BWD_WORKSPACE_MIB = 1024 };
int sdpa_backward_tile(const AttnShape *s, int nq, int nk, int forced);
// "forward 4096×4096 causal, H 12/12, hd 64": for messages.
void sdpa_plan_describe(const SdpaPlan *p, char *buf, size_t n);

// The graphs built so far, one per plan; beyond SDPA_CACHE_CAP the least recently used is evicted. A graph
// pointer is opaque here (attention/cudnn_sdpa.cpp's); NULL graphs are remembered too (cuDNN rejected the plan).
enum { SDPA_CACHE_CAP = 32 };
typedef struct {
    SdpaPlan plan;
    void *graph;
    unsigned long used;   // the cache's clock at the last find or add
} SdpaCacheEntry;
typedef struct {
    long built, rejected;   // graphs built, plans cuDNN could not build (remembered as NULL graphs)
    long hits, evicted;     // finds that found an entry, entries evicted
} SdpaCacheStats;
typedef struct {
    SdpaCacheEntry e[SDPA_CACHE_CAP];
    int n;
    unsigned long clock;
    SdpaCacheStats stats;
} SdpaCache;
// The entry of plan p, or NULL when none was added.
SdpaCacheEntry *sdpa_cache_find(SdpaCache *c, const SdpaPlan *p);
// Adds p's graph (p must not be there yet). *evicted gets the graph of the entry it replaced (the caller
// destroys it) or NULL; returns the new entry.
SdpaCacheEntry *sdpa_cache_add(SdpaCache *c, const SdpaPlan *p, void *graph, void **evicted);
