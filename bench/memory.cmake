# bench/memory.cmake — the memory plan's longest T per preset, mode and sp (bench/memory.sh drives it with ring_bench and ringgpt).
add_executable(memory_plan ${CMAKE_SOURCE_DIR}/bench/memory_plan.c)
target_link_libraries(memory_plan PRIVATE ringgpt_lib)
