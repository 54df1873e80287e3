# tests/core/tests.cmake — core/: the MPI progress thread moves a transfer while no rank calls MPI (TCP forced, as between hosts);
# libFuzzer on the config-file reader (label fuzz; SKIP 77 without clang's libFuzzer).
add_executable(test_comm_progress ${CMAKE_SOURCE_DIR}/tests/core/test_comm_progress.c)
target_link_libraries(test_comm_progress PRIVATE ringgpt_lib)
ringgpt_mpi_test(core_comm_progress core 2 $<TARGET_FILE:test_comm_progress>)
set_property(TEST core_comm_progress APPEND PROPERTY ENVIRONMENT "OMPI_MCA_btl=tcp,self")
add_test(NAME core_fuzz_config
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/core/fuzz_config.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 10 ${RINGGPT_BIN})
set_tests_properties(core_fuzz_config PROPERTIES LABELS "core;fuzz" TIMEOUT 180 SKIP_RETURN_CODE 77)
