# tests/core/tests.cmake — core/: the MPI progress thread moves a transfer while no rank calls MPI (TCP forced, as between hosts);
# all-gather, reduce-scatter and all-to-all over 1 (the one-process backend), 2 and 3 ranks;
# libFuzzer on the config-file reader (label fuzz; SKIP 77 without clang's libFuzzer).
add_executable(test_comm_progress ${CMAKE_SOURCE_DIR}/tests/core/test_comm_progress.c)
target_link_libraries(test_comm_progress PRIVATE ringgpt_lib)
ringgpt_mpi_test(core_comm_progress core 2 $<TARGET_FILE:test_comm_progress>)
set_property(TEST core_comm_progress APPEND PROPERTY ENVIRONMENT "OMPI_MCA_btl=tcp,self")
add_executable(test_comm_collectives ${CMAKE_SOURCE_DIR}/tests/core/test_comm_collectives.c)
target_link_libraries(test_comm_collectives PRIVATE ringgpt_lib)
add_test(NAME core_comm_collectives_np1 COMMAND $<TARGET_FILE:test_comm_collectives>)
set_tests_properties(core_comm_collectives_np1 PROPERTIES LABELS core TIMEOUT 60)
foreach(np 2 3)
  ringgpt_mpi_test(core_comm_collectives_np${np} core ${np} $<TARGET_FILE:test_comm_collectives>)
endforeach()
add_test(NAME core_fuzz_config
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/core/fuzz_config.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 10 ${RINGGPT_BIN})
set_tests_properties(core_fuzz_config PROPERTIES LABELS "core;fuzz" TIMEOUT 180 SKIP_RETURN_CODE 77)
