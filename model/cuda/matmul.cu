// model/cuda/matmul.cu — matmuls through cuBLASLt: row-major GEMMs with operands in their storage, descriptors and algorithms cached per shape.
#include <string.h>

#include "model/cuda/ops_cuda.cuh"

typedef struct {
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc, align;
    cublasComputeType_t compute;
    cudaDataType_t ab, c;   // A and B (both bf16 or both fp32), C/D
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} GemmPlan;

enum { MAX_PLANS = 128 };
static GemmPlan g_plans[MAX_PLANS];
static int g_nplans;

static int pointer_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    int al = 256;
    while (al > 2 && a % al) al /= 2;   // 2: a bf16 weight at an odd element offset
    return al;
}

static void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, uint32_t v) {
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof v));
}

static GemmPlan *gemm_plan(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda, int ldb, int ldc,
                           int align, cudaDataType_t ab, cudaDataType_t c) {
    for (int i = 0; i < g_nplans; i++) {
        GemmPlan *p = &g_plans[i];
        if (p->ta == ta && p->tb == tb && p->m == m && p->n == n && p->k == k && p->lda == lda && p->ldb == ldb &&
            p->ldc == ldc && p->align == align && p->compute == CB.compute && p->ab == ab && p->c == c)
            return p;
    }
    GemmPlan *p = &g_plans[g_nplans < MAX_PLANS ? g_nplans++ : MAX_PLANS - 1];   // the last slot is recycled
    if (p->desc) {
        cublasLtMatmulDescDestroy(p->desc);
        cublasLtMatrixLayoutDestroy(p->la), cublasLtMatrixLayoutDestroy(p->lb), cublasLtMatrixLayoutDestroy(p->lc);
    }
    *p = GemmPlan{};
    p->ta = ta, p->tb = tb, p->m = m, p->n = n, p->k = k, p->lda = lda, p->ldb = ldb, p->ldc = ldc, p->align = align;
    p->compute = CB.compute, p->ab = ab, p->c = c;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CB.compute, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    // Stored shapes (column-major): A is m×k (or k×m transposed), B is k×n (or n×k), C is m×n.
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la, ab, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb, ab, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lc, c, m, n, ldc));
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = WORKSPACE_BYTES;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, (uint32_t)align);
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, (uint32_t)align);
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, (uint32_t)align);
    set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, (uint32_t)align);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(CB.lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0)
        fail("rank %d, GPU %d: cuBLASLt has no algorithm for a %d×%d×%d matmul (compute %s, alignment %d)", CB.rank,
             cuda_current_device(), m, n, k, CB.compute_name, align);
    p->algo = res.algo;
    return p;
}

// Floats a stored row-major operand spans: rows rows of ld, the last one cols long.
static size_t operand_span(int rows, int cols, int ld) { return (size_t)(rows - 1) * ld + cols; }

// An operand as the GEMM reads it: bf16 operands as they are; fp32 ones converted in bf16 mode (weights from the
// shadow), else read as fp32. fp32 mode (tf32, fp32) cannot read bf16 operands: --activations bf16 requires
// --matmul bf16 (train/train.c refuses the others).
static const void *operand(const void *p, ActStore s, size_t span, int slot) {
    if (s == ACT_BF16) {
        if (!CB.bf16_operands) fail("internal: a bf16 activation reached a %s matmul", CB.compute_name);
        return p;
    }
    return CB.bf16_operands ? (const void *)cb_bf16_operand((const float *)p, span, slot) : p;
}

void cb_gemm(bool ta, bool tb, int M, int N, int K, const void *A32, int lda, ActStore as, const void *B32, int ldb,
             ActStore bs, float beta, void *C, int ldc, ActStore cs) {
    if (M <= 0 || N <= 0) return;
    size_t ce = act_elem_bytes(cs);
    if (cs == ACT_BF16 && beta != 0) fail("internal: a bf16 GEMM output cannot accumulate (beta = %g)", beta);
    if (K <= 0) {   // an empty sum: C = beta·C
        if (beta == 0)
            for (int i = 0; i < M; i++) cb_zero((char *)C + (size_t)i * ldc * ce, (size_t)N * ce);
        return;
    }
    // A stored (M, K) or (K, M) when ta; B stored (K, N) or (N, K) when tb
    const void *A = operand(A32, as, ta ? operand_span(K, M, lda) : operand_span(M, K, lda), SCR_BF16_A);
    const void *B = operand(B32, bs, tb ? operand_span(N, K, ldb) : operand_span(K, N, ldb), SCR_BF16_B);
    // Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ: swap the operands.
    int align = pointer_alignment(A);
    int ab = pointer_alignment(B), ac = pointer_alignment(C);
    align = ab < align ? ab : align;
    align = ac < align ? ac : align;
    GemmPlan *p = gemm_plan(tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, ldb, lda, ldc,
                            align, CB.bf16_operands ? CUDA_R_16BF : CUDA_R_32F, cs == ACT_BF16 ? CUDA_R_16BF : CUDA_R_32F);
    float alpha = 1.0f;
    CUBLAS_CHECK(cublasLtMatmul(CB.lt, p->desc, &alpha, B, p->la, A, p->lb, &beta, C, p->lc, C, p->lc, &p->algo,
                                CB.workspace, WORKSPACE_BYTES, CB.stream));
}

void cuda_matmul_forward(real *out, const real *in, const real *w, int N, int In, int Out, ActStore outs, ActStore ins) {
    cb_gemm(false, true, N, Out, In, in, In, ins, w, In, ACT_F32, 0.0f, out, Out, outs);
}

void cuda_matmul_backward(real *din, real *dw, const real *dout, const real *in, const real *w, int N, int In, int Out,
                          int accumulate_din, ActStore dins, ActStore douts, ActStore ins) {
    if (din) cb_gemm(false, false, N, In, Out, dout, Out, douts, w, In, ACT_F32, accumulate_din ? 1.0f : 0.0f, din, In, dins);
    if (dw) cb_gemm(true, false, Out, In, N, dout, Out, douts, in, In, ins, 1.0f, dw, In, ACT_F32);
}
