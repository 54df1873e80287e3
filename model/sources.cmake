# model/sources.cmake — config, parameter table, CPU ops, the transformer block and its orchestration, decoding, memory plan, optimizer; with CUDA: the CUDA ops.
set(RINGGPT_model_SOURCES model/config.c model/params.c model/ops_cpu.c model/gpt.c model/decode.c model/memplan.c model/stepplan.c model/adamw.c)
set(RINGGPT_model_CUDA_SOURCES model/ops_cuda.cu model/cublaslt_lazy.c)
