# bench/ring.cmake — the ring benchmark: per-rank memory, step time, hidden ring wait (bench/ring_bench.sh drives it).
add_executable(ring_bench ${CMAKE_SOURCE_DIR}/bench/ring_bench.c)
target_link_libraries(ring_bench PRIVATE ringgpt_lib)
