# core/sources.cmake — errors, flags, strict JSON, RNG, comm (MPI, one process); with CUDA: the device and its memory, NCCL comms.
set(RINGGPT_core_SOURCES core/common.c core/cpu_threads.c core/args.c core/json_strict.c core/outdir.c core/rng.c core/comm.c core/comm_mpi.c
    core/comm_local.c)
set(RINGGPT_core_CUDA_SOURCES core/cuda_device.c core/comm_nccl.c)
