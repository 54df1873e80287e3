# core/sources.cmake — errors, flags, RNG (comm and the backend table's glue join here).
list(APPEND RINGGPT_SOURCES core/common.c core/args.c core/rng.c)
