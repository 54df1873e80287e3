// tests/attention/test_sdpa_plan.c — cuDNN attention's host-side planning on the CPU: which ring blocks it runs, the tensors' (b, h, s, d) views, one graph per ring block shape, the LRU cache.
// No GPU and no cuDNN needed: attention/sdpa_plan.c is plain C. The views are checked element by element
// against the block API's token-major layout (core/backend.h), for whole Q blocks and for the second half of a
// rank's rows (the ring's j > r step, a later pointer into the same rows); replaying the ring's schedule
// (attention/ring.c's three cases) over sp ranks and a few layers must need exactly the distinct block shapes'
// graphs, built once each.
#include <math.h>
#include <string.h>

#include "attention/sdpa_plan.h"
#include "tests/check.h"

static AttnShape shape(int H, int Hkv, int hd) { return (AttnShape){.n_head = H, .n_kv_head = Hkv, .head_dim = hd}; }

static void test_supported(void) {
    AttnShape s64 = shape(8, 2, 64), s128 = shape(4, 4, 128), s1 = shape(6, 1, 64);
    CHECK(!sdpa_unsupported(&s64, 300, 300, ATTN_CAUSAL, false), "causal diagonal block, GQA, hd 64");
    CHECK(!sdpa_unsupported(&s128, 300, 150, ATTN_FULL, false), "full block (j < r: every row, the first chunk)");
    CHECK(!sdpa_unsupported(&s1, 150, 300, ATTN_FULL, false), "second-half rows x all keys, MQA");
    const struct {
        AttnShape s;
        int nq, nk;
        AttnMask mask;
        bool docs;
        const char *word;   // a word the reason must contain
    } refused[] = {
        {shape(4, 4, 32), 64, 64, ATTN_CAUSAL, false, "head dim"},
        {shape(4, 4, 16), 64, 64, ATTN_FULL, false, "head dim"},
        {shape(2, 2, 256), 64, 64, ATTN_FULL, false, "head dim"},
        {shape(4, 4, 64), 64, 64, ATTN_CAUSAL, true, "document"},
        {shape(6, 4, 64), 64, 64, ATTN_FULL, false, "multiple"},
        {shape(4, 4, 64), 64, 32, ATTN_CAUSAL, false, "causal"},
        {shape(4, 4, 64), 0, 32, ATTN_FULL, false, "empty"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const char *why = sdpa_unsupported(&refused[i].s, refused[i].nq, refused[i].nk, refused[i].mask, refused[i].docs);
        CHECK(why && strstr(why, refused[i].word), "case %zu: expected a reason about '%s', got '%s'", i, refused[i].word,
              why ? why : "(supported)");
    }
}

// Element (b = 0, h, s, d) of a view, as an offset from its base pointer.
static int64_t at(const SdpaTensor *t, int h, int row, int d) { return h * t->stride[1] + row * t->stride[2] + d * t->stride[3]; }

// The views address exactly the token-major elements: q (nq, H, hd) row i head h column d at (i·H + h)·hd + d;
// k, v (nk, Hkv, hd) likewise; stats (H, nq) at h·nq + i; and a second-half block's row i is global row half + i.
static void test_views(void) {
    AttnShape s = shape(6, 2, 64);
    int L = 10, half = L / 2;
    SdpaPlan f = sdpa_plan(&s, L, L, ATTN_CAUSAL, SDPA_FORWARD), late = sdpa_plan(&s, half, L, ATTN_FULL, SDPA_BACKWARD);
    int bad = 0;
    for (int i = 0; i < L; i++)
        for (int h = 0; h < 6; h++)
            for (int d = 0; d < 64; d++) {
                bad += at(&f.q, h, i, d) != ((int64_t)i * 6 + h) * 64 + d;
                if (h < 2) bad += at(&f.kv, h, i, d) != ((int64_t)i * 2 + h) * 64 + d;
                // the late block's view starts at q + half·H·hd (attention/ring.c's qoff)
                if (i < half) bad += (int64_t)half * 6 * 64 + at(&late.q, h, i, d) != ((int64_t)(half + i) * 6 + h) * 64 + d;
            }
    for (int i = 0; i < L; i++)
        for (int h = 0; h < 6; h++) bad += at(&f.stats, h, i, 0) != (int64_t)h * L + i;
    CHECK(bad == 0, "%d elements of the (b, h, s, d) views are not where the block API keeps them", bad);
    CHECK(f.q.dim[0] == 1 && f.q.dim[1] == 6 && f.q.dim[2] == L && f.q.dim[3] == 64, "q dims (1, H, nq, hd)");
    CHECK(f.kv.dim[1] == 2 && f.kv.dim[2] == L && late.kv.dim[2] == L && late.q.dim[2] == half, "kv dims (1, Hkv, nk, hd)");
    CHECK(f.stats.dim[1] == 6 && f.stats.dim[2] == L && f.stats.dim[3] == 1, "stats dims (1, H, nq, 1)");
    CHECK(f.causal && !late.causal && f.dir == SDPA_FORWARD && late.dir == SDPA_BACKWARD, "mask and direction");
    CHECK(f.scale == (float)(1.0 / sqrt(64.0)), "scale 1/sqrt(hd) as the flash kernels compute it: %.9g", f.scale);
    SdpaPlan f2 = sdpa_plan(&s, L, L, ATTN_CAUSAL, SDPA_FORWARD), b = sdpa_plan(&s, L, L, ATTN_CAUSAL, SDPA_BACKWARD);
    SdpaPlan full = sdpa_plan(&s, L, L, ATTN_FULL, SDPA_FORWARD), other = sdpa_plan(&s, L + 2, L + 2, ATTN_CAUSAL, SDPA_FORWARD);
    AttnShape s2 = shape(6, 3, 64);
    SdpaPlan gqa = sdpa_plan(&s2, L, L, ATTN_CAUSAL, SDPA_FORWARD);
    CHECK(sdpa_plan_equal(&f, &f2), "the same call gives the same plan");
    CHECK(!sdpa_plan_equal(&f, &b) && !sdpa_plan_equal(&f, &full) && !sdpa_plan_equal(&f, &other) &&
              !sdpa_plan_equal(&f, &gqa),
          "direction, mask, length and kv heads each give another plan");
    char desc[128];
    sdpa_plan_describe(&late, desc, sizeof desc);
    CHECK(!strcmp(desc, "backward 5×10 full, H 6/2, hd 64"), "describe: '%s'", desc);
}

// A training step's block calls on one rank of a ring of sp (attention/ring.c's schedule: j == r causal, j < r
// every row × the first chunk, j > r the second half of the rows × all keys), over layers and samples, forward
// and backward: every call's graph comes from the cache, built once per distinct shape.
static void test_ring_schedule(void) {
    AttnShape s = shape(8, 2, 128);
    for (int sp = 1; sp <= 5; sp++)
        for (int r = 0; r < sp; r++) {
            SdpaCache c = {0};
            int L = 2 * 48, half = L / 2, calls = 0;
            for (int layer = 0; layer < 3; layer++)
                for (int sample = 0; sample < 2; sample++)
                    for (int dir = 0; dir < 2; dir++)
                        for (int step = 0; step < sp; step++) {
                            int j = (r - step + sp) % sp, nq = j > r ? half : L, nk = j < r ? half : L;
                            AttnMask mask = j == r ? ATTN_CAUSAL : ATTN_FULL;
                            CHECK(!sdpa_unsupported(&s, nq, nk, mask, false), "sp %d rank %d step %d: supported", sp, r, step);
                            SdpaPlan p = sdpa_plan(&s, nq, nk, mask, (SdpaDir)dir);
                            if (!sdpa_cache_find(&c, &p)) {
                                void *evicted;
                                sdpa_cache_add(&c, &p, &c, &evicted);   // any non-NULL graph
                                CHECK(!evicted, "nothing is evicted while the shapes fit");
                            }
                            calls++;
                        }
            // shapes this rank meets: causal always; j < r exists when r > 0; j > r when r < sp − 1
            long shapes = 2 * (1 + (r > 0) + (r < sp - 1));
            CHECK(c.stats.built == shapes && c.stats.hits == calls - shapes && c.stats.rejected == 0,
                  "sp %d rank %d: %ld graphs built, %ld hits for %d calls (expected %ld built)", sp, r, c.stats.built,
                  c.stats.hits, calls, shapes);
        }
}

static void test_cache_lru(void) {
    SdpaCache c = {0};
    AttnShape s = shape(4, 4, 64);
    static int graphs[SDPA_CACHE_CAP + 2];
    SdpaPlan p[SDPA_CACHE_CAP + 2];
    for (int i = 0; i < SDPA_CACHE_CAP; i++) {
        p[i] = sdpa_plan(&s, 64 + 2 * i, 64 + 2 * i, ATTN_CAUSAL, SDPA_FORWARD);
        void *ev;
        sdpa_cache_add(&c, &p[i], &graphs[i], &ev);
        CHECK(!ev, "plan %d: no eviction below the capacity", i);
    }
    for (int i = 1; i < SDPA_CACHE_CAP; i++) {   // every plan but the first used again: the first is the oldest
        SdpaCacheEntry *e = sdpa_cache_find(&c, &p[i]);
        CHECK(e && e->graph == &graphs[i], "plan %d found with its graph", i);
    }
    p[SDPA_CACHE_CAP] = sdpa_plan(&s, 1000, 1000, ATTN_CAUSAL, SDPA_FORWARD);
    void *ev;
    sdpa_cache_add(&c, &p[SDPA_CACHE_CAP], &graphs[SDPA_CACHE_CAP], &ev);
    CHECK(ev == &graphs[0], "the least recently used graph is evicted and handed back to be destroyed");
    CHECK(!sdpa_cache_find(&c, &p[0]) && sdpa_cache_find(&c, &p[SDPA_CACHE_CAP]) && sdpa_cache_find(&c, &p[1]),
          "after the eviction: the old plan is gone, the new and the others are there");
    // A plan cuDNN refused is remembered (NULL graph): found, not built again.
    p[SDPA_CACHE_CAP + 1] = sdpa_plan(&s, 1000, 500, ATTN_FULL, SDPA_BACKWARD);
    sdpa_cache_add(&c, &p[SDPA_CACHE_CAP + 1], NULL, &ev);
    SdpaCacheEntry *e = sdpa_cache_find(&c, &p[SDPA_CACHE_CAP + 1]);
    CHECK(e && !e->graph, "a refused plan is found as refused");
    CHECK(c.stats.built == SDPA_CACHE_CAP + 1 && c.stats.rejected == 1 && c.stats.evicted == 2 && c.n == SDPA_CACHE_CAP,
          "stats: %ld built, %ld rejected, %ld evicted, %d entries", c.stats.built, c.stats.rejected, c.stats.evicted, c.n);
}

// The backward's sub-block size: whole blocks while cuDNN's deterministic workspace fits the budget, else the
// largest power of two whose square sub-block fits (the 65536-token block that asked an H100 for 96 GiB).
static void test_backward_tile(void) {
    AttnShape s = {.n_head = 12, .n_kv_head = 12, .head_dim = 64};
    CHECK(sdpa_backward_tile(&s, 4096, 4096, 0) == 4096, "4096 x 4096, H·hd 768: one call (384 MiB)");
    int t = sdpa_backward_tile(&s, 65536, 65536, 0);
    CHECK(t == 4096, "65536 x 65536, H·hd 768: sub-blocks of 4096 (got %d): 384 MiB each, 8192 would need 1.5 GiB", t);
    CHECK(sdpa_backward_tile(&s, 65536, 1024, 0) == 4096, "a tall block past the budget (1.5 GiB) is cut: 4096 (got %d)",
          sdpa_backward_tile(&s, 65536, 1024, 0));
    AttnShape w = {.n_head = 32, .n_kv_head = 8, .head_dim = 128};
    t = sdpa_backward_tile(&w, 32768, 32768, 0);
    CHECK(t == 2048, "32768 x 32768, H·hd 4096: 2048 (got %d)", t);
    CHECK(sdpa_backward_tile(&s, 150, 150, 64) == 64 && sdpa_backward_tile(&s, 150, 150, 4096) == 150,
          "the test hook's tile is taken, capped at the block");
}

int main(void) {
    test_backward_tile();
    test_supported();
    test_views();
    test_ring_schedule();
    test_cache_lru();
    return check_summary();
}
