# attention/sources.cmake — CPU block kernels, the single-rank driver and the ring; with CUDA: the flash kernels (attention_sm90.cu is built apart, CMakeLists.txt).
set(RINGGPT_attention_SOURCES attention/attention.c attention/attention_cpu.c attention/ring.c attention/sdpa_plan.c)
set(RINGGPT_attention_CUDA_SOURCES attention/attention_cuda.cu)
