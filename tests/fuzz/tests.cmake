# tests/fuzz/tests.cmake — libFuzzer run of the shard reader (label `fuzz`, ~20 s); prints SKIP and passes without clang/libFuzzer.
add_test(NAME fuzz_shard_reader
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 20 ${RINGGPT_BIN})
set_tests_properties(fuzz_shard_reader PROPERTIES LABELS "data;fuzz" TIMEOUT 180)
