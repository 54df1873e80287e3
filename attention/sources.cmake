# attention/sources.cmake — CPU block kernels, the single-rank driver, the ring, its exchange under a layout, Ulysses, and the context-parallel handle over them; with CUDA: the flash kernels (cuDNN's glue and the opt-in Hopper kernels are added by cmake/cuda.cmake).
set(RINGGPT_attention_SOURCES attention/attention.c attention/attention_cpu.c attention/ring.c attention/ring_exchange.c attention/ring_model.c attention/ulysses.c attention/cp.c
    attention/sdpa_plan.c)
set(RINGGPT_attention_CUDA_SOURCES attention/attention_cuda.cu)
