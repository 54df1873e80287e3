# model/sources.cmake — config, RoPE, parameter table, CPU ops, the activation table, the transformer block and its orchestration, decoding, memory plan, optimizer, the shard layout and the sharded step's collectives; with CUDA: the CUDA ops by family (model/cuda/).
set(RINGGPT_model_SOURCES model/config.c model/rope.c model/params.c model/ops_cpu.c model/acts.c model/gpt.c model/decode.c model/memplan.c model/stepplan.c model/adamw.c model/shard.c model/shard_comm.c)
set(RINGGPT_model_CUDA_SOURCES model/cuda/backend.cu model/cuda/matmul.cu model/cuda/norm.cu model/cuda/pointwise.cu
    model/cuda/lmhead.cu model/cuda/optim.cu model/cublaslt_lazy.c)
