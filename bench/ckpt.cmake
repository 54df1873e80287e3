# bench/ckpt.cmake — checkpoint save/load benchmark (ckpt_bench [DIR] [PRESET...]).
add_executable(ckpt_bench ${CMAKE_SOURCE_DIR}/bench/ckpt_bench.c)
target_link_libraries(ckpt_bench PRIVATE ringgpt_lib)
