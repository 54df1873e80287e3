# tests/core/tests.cmake — core/: libFuzzer on the config-file reader (label fuzz; SKIP 77 without clang's libFuzzer).
add_test(NAME core_fuzz_config
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/core/fuzz_config.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 10 ${RINGGPT_BIN})
set_tests_properties(core_fuzz_config PROPERTIES LABELS "core;fuzz" TIMEOUT 180 SKIP_RETURN_CODE 77)
