# attention/sources.cmake — CPU block kernels and the single-rank driver (the ring joins here).
list(APPEND RINGGPT_SOURCES attention/attention.c attention/attention_cpu.c)
