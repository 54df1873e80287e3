// attention/cudnn_sdpa.cpp — cuDNN's fused attention graphs through the cuDNN frontend (header-only C++, PyPI's nvidia-cudnn-frontend): the project's one C++ translation unit, behind C functions.
// Built only when cmake/cuda.cmake finds cudnn.h and the frontend (RINGGPT_HAVE_CUDNN). The frontend loads
// cuDNN itself (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING): libcudnn is opened here on first use, so nothing is
// linked and a CPU run of a CUDA build never pays for it. One graph per SdpaPlan (attention/sdpa_plan.h),
// built on first use (validate, operation graph, heuristics A, support check, plans) and cached; a plan cuDNN
// rejects is cached as such and said once.
#include <dlfcn.h>

#include <cudnn_frontend.h>

#include <string>
#include <unordered_map>

#include "core/cuda_check.h"

RINGGPT_EXTERN_C_BEGIN
#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
RINGGPT_EXTERN_C_END

#if CUDNN_FRONTEND_VERSION < 11000
#error "the cuDNN frontend is older than 1.10; scripts/deps.sh installs a current nvidia-cudnn-frontend"
#endif

namespace fe = cudnn_frontend;

// The frontend's dynamic loading reads the library handle from here.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
}

#define STR_(x) #x
#define STR(x) STR_(x)

static struct {
    bool loaded;
    cudnnHandle_t handle;
    SdpaCache cache;
    void *workspace;
    int64_t workspace_bytes;
} S;

enum : int64_t { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_DO, UID_DQ, UID_DK, UID_DV };

// libcudnn.so.<major>: the loader's search path first, then the toolkit's lib directory configure found.
static void *open_cudnn(std::string &why) {
    const char *soname = "libcudnn.so." STR(CUDNN_MAJOR);
    void *h = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
    if (h) return h;
    why = dlerror();
#ifdef RINGGPT_CUDNN_LIBDIR
    if (!RINGGPT_CUDNN_LIBDIR[0]) return nullptr;
    std::string path = std::string(RINGGPT_CUDNN_LIBDIR) + "/" + soname;
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h) return h;
    why += "; " + std::string(dlerror());
#endif
    return nullptr;
}

size_t cudnn_sdpa_version(void) {
    std::string why;
    if (!fe::cudnn_dlhandle) fe::cudnn_dlhandle = open_cudnn(why);
    if (!fe::cudnn_dlhandle) return 0;
    auto get_version = (size_t (*)(void))dlsym(fe::cudnn_dlhandle, "cudnnGetVersion");
    return get_version ? get_version() : 0;
}

bool attn_cuda_cudnn_available(void) { return cudnn_sdpa_version() / 10000 == CUDNN_MAJOR; }

void cudnn_sdpa_load(void) {
    if (S.loaded) return;
    std::string why;
    if (!fe::cudnn_dlhandle) fe::cudnn_dlhandle = open_cudnn(why);
    if (!fe::cudnn_dlhandle)
        fail("--attn cudnn: cannot load libcudnn.so.%d (%s); install cuDNN %d (the CUDA toolkit's, or pip's "
             "nvidia-cudnn-cu13) and put its lib directory on LD_LIBRARY_PATH, or use --attn flash",
             CUDNN_MAJOR, why.c_str(), CUDNN_MAJOR);
    size_t v = cudnn_sdpa_version();
    if (v / 10000 != CUDNN_MAJOR)
        fail("--attn cudnn: the loaded cuDNN is version %zu but this ringgpt was built against %d.%d; install cuDNN %d "
             "or use --attn flash",
             v, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_MAJOR);
    try {
        cudnnStatus_t st = fe::detail::create_handle(&S.handle);
        if (st != CUDNN_STATUS_SUCCESS)
            fail("--attn cudnn: cudnnCreate failed: %s; use --attn flash", fe::detail::get_error_string(st));
        st = fe::detail::set_stream(S.handle, (cudaStream_t)cuda_backend_stream());
        if (st != CUDNN_STATUS_SUCCESS) fail("--attn cudnn: cudnnSetStream failed: %s", fe::detail::get_error_string(st));
    } catch (const std::exception &e) {   // the frontend throws when a symbol or the CUDA runtime is missing
        fail("--attn cudnn: %s; use --attn flash", e.what());
    }
    S.loaded = true;
}

SdpaCacheStats cudnn_sdpa_cache_stats(void) { return S.cache.stats; }

static std::vector<int64_t> vec4(const int64_t v[4]) { return {v[0], v[1], v[2], v[3]}; }

static fe::graph::Tensor_attributes tensor(const char *name, int64_t uid, const SdpaTensor &t) {
    return fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(vec4(t.dim)).set_stride(vec4(t.stride));
}

// The graph of plan p, or NULL with why when cuDNN cannot run it.
static fe::graph::Graph *build(const SdpaPlan *p, std::string &why) {
    auto *g = new fe::graph::Graph();
    g->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto Q = g->tensor(tensor("Q", UID_Q, p->q)), K = g->tensor(tensor("K", UID_K, p->kv));
    auto V = g->tensor(tensor("V", UID_V, p->kv));
    if (p->dir == SDPA_FORWARD) {
        auto opts = fe::graph::SDPA_attributes().set_name("ring_block").set_generate_stats(true).set_attn_scale(p->scale);
        if (p->causal) opts.set_causal_mask(true);
        auto [O, Stats] = g->sdpa(Q, K, V, opts);
        O->set_output(true).set_uid(UID_O).set_dim(vec4(p->q.dim)).set_stride(vec4(p->q.stride));
        Stats->set_output(true).set_uid(UID_STATS).set_data_type(fe::DataType_t::FLOAT).set_dim(vec4(p->stats.dim))
            .set_stride(vec4(p->stats.stride));
    } else {
        auto O = g->tensor(tensor("O", UID_O, p->q)), dO = g->tensor(tensor("dO", UID_DO, p->q));
        auto Stats = g->tensor(tensor("Stats", UID_STATS, p->stats).set_data_type(fe::DataType_t::FLOAT));
        // Deterministic: dQ is summed in a fixed order (the project's rule for every gradient; cuDNN's default
        // accumulates it with atomics).
        auto opts = fe::graph::SDPA_backward_attributes()
                        .set_name("ring_block_backward")
                        .set_attn_scale(p->scale)
                        .set_deterministic_algorithm(true);
        if (p->causal) opts.set_causal_mask(true);
        auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, opts);
        dQ->set_output(true).set_uid(UID_DQ).set_dim(vec4(p->q.dim)).set_stride(vec4(p->q.stride));
        dK->set_output(true).set_uid(UID_DK).set_dim(vec4(p->kv.dim)).set_stride(vec4(p->kv.stride));
        dV->set_output(true).set_uid(UID_DV).set_dim(vec4(p->kv.dim)).set_stride(vec4(p->kv.stride));
    }
    fe::error_t e = g->validate();
    if (e.is_good()) e = g->build_operation_graph(S.handle);
    if (e.is_good()) e = g->create_execution_plans({fe::HeurMode_t::A});
    if (e.is_good()) e = g->check_support(S.handle);
    if (e.is_good()) e = g->build_plans(S.handle);
    if (e.is_good()) return g;
    why = e.get_message();
    delete g;
    return nullptr;
}

// The cached graph of p (built now when new), or NULL when cuDNN cannot run it.
static fe::graph::Graph *graph_for(const SdpaPlan *p) {
    SdpaCacheEntry *e = sdpa_cache_find(&S.cache, p);
    if (e) return (fe::graph::Graph *)e->graph;
    std::string why;
    fe::graph::Graph *g = nullptr;
    try {
        g = build(p, why);
    } catch (const std::exception &ex) {
        why = ex.what();
    }
    if (!g) {
        char desc[128];
        sdpa_plan_describe(p, desc, sizeof desc);
        fprintf(stderr, "ringgpt: cuDNN cannot run the attention block (%s): %s; these blocks run the flash kernels\n",
                desc, why.c_str());
    }
    void *evicted = nullptr;
    sdpa_cache_add(&S.cache, p, g, &evicted);
    delete (fe::graph::Graph *)evicted;
    return g;
}

static bool run(const SdpaPlan *p, std::unordered_map<int64_t, void *> &ptrs) {
    cudnn_sdpa_load();
    fe::graph::Graph *g = graph_for(p);
    if (!g) return false;
    std::string why;
    try {
        int64_t ws = 0;
        fe::error_t e = g->get_workspace_size(ws);
        if (e.is_good() && ws > S.workspace_bytes) {
            if (S.workspace) cuda_mem_release(S.workspace);
            S.workspace = cuda_mem_alloc((size_t)ws, "cuDNN attention workspace");
            S.workspace_bytes = ws;
        }
        if (e.is_good()) e = g->execute(S.handle, ptrs, S.workspace);
        if (e.is_good()) return true;
        why = e.get_message();
    } catch (const std::exception &ex) {
        why = ex.what();
    }
    char desc[128];
    sdpa_plan_describe(p, desc, sizeof desc);
    fail("cuDNN attention (%s): %s; use --attn flash", desc, why.c_str());
}

bool cudnn_sdpa_forward(const SdpaPlan *p, const void *q, const void *k, const void *v, void *o, float *stats) {
    std::unordered_map<int64_t, void *> ptrs = {{UID_Q, (void *)q}, {UID_K, (void *)k}, {UID_V, (void *)v},
                                                {UID_O, o},         {UID_STATS, stats}};
    return run(p, ptrs);
}

bool cudnn_sdpa_backward(const SdpaPlan *p, const void *q, const void *k, const void *v, const void *o,
                         const void *dout, const float *stats, void *dq, void *dk, void *dv) {
    std::unordered_map<int64_t, void *> ptrs = {
        {UID_Q, (void *)q}, {UID_K, (void *)k},         {UID_V, (void *)v},        {UID_O, (void *)o},
        {UID_DO, (void *)dout}, {UID_STATS, (void *)stats}, {UID_DQ, dq}, {UID_DK, dk}, {UID_DV, dv}};
    return run(p, ptrs);
}
