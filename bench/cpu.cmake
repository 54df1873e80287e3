# bench/cpu.cmake — CPU benchmark programs (bench/cpu_train.sh drives the ringgpt binary itself).
add_executable(attention_bench ${CMAKE_SOURCE_DIR}/bench/attention_bench.c)
target_link_libraries(attention_bench PRIVATE ringgpt_lib)
