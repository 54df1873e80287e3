# core/sources.cmake — errors, flags, RNG, comm (MPI and single-process backends); the backend table's glue joins here.
list(APPEND RINGGPT_SOURCES core/common.c core/cpu_threads.c core/args.c core/json_strict.c core/rng.c core/comm.c core/comm_mpi.c core/comm_local.c)
