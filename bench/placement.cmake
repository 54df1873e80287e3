# bench/placement.cmake — placement counts: attention pairs per rank and K/V traffic of the zigzag and the cost placement on a dataset's windows.
add_executable(placement_bench bench/placement_bench.c)
target_link_libraries(placement_bench PRIVATE ringgpt_lib)
