# bench/ring.cmake — the ring benchmarks: per-rank memory, step time, hidden ring wait (bench/ring_bench.sh drives ring_bench);
# the overlap on a real link and the timing model (bench/ring_overlap.sh drives ring_overlap); one layer's attention as the
# ring, Ulysses and the hybrid side by side (cp_bench).
add_executable(ring_bench ${CMAKE_SOURCE_DIR}/bench/ring_bench.c)
target_link_libraries(ring_bench PRIVATE ringgpt_lib)
add_executable(ring_overlap ${CMAKE_SOURCE_DIR}/bench/ring_overlap.c)
target_link_libraries(ring_overlap PRIVATE ringgpt_lib)
add_executable(cp_bench ${CMAKE_SOURCE_DIR}/bench/cp_bench.c)
target_link_libraries(cp_bench PRIVATE ringgpt_lib)
