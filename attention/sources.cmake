# attention/sources.cmake — CPU block kernels, the single-rank driver and the ring.
list(APPEND RINGGPT_SOURCES attention/attention.c attention/attention_cpu.c attention/ring.c)
