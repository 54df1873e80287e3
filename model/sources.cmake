# model/sources.cmake — config, parameter table, CPU ops, orchestration, optimizer.
list(APPEND RINGGPT_SOURCES model/config.c model/params.c model/ops_cpu.c model/gpt.c model/memplan.c model/adamw.c)
