# bench/data.cmake — data pipeline benchmark: prepare throughput, compression ratio, loader tokens/s on one core.
add_executable(data_bench bench/data_bench.c)
target_link_libraries(data_bench PRIVATE ringgpt_lib)
