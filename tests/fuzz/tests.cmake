# tests/fuzz/tests.cmake — libFuzzer runs of the shard reader and the tokenizer.json parser (label `fuzz`, ~20 s + ~15 s); prints SKIP and passes without clang/libFuzzer.
add_test(NAME fuzz_shard_reader
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 20 ${RINGGPT_BIN})
set_tests_properties(fuzz_shard_reader PROPERTIES LABELS "data;fuzz" TIMEOUT 180)
add_test(NAME fuzz_tokenizer_json
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz_tokenizer.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 15 ${RINGGPT_BIN})
set_tests_properties(fuzz_tokenizer_json PROPERTIES LABELS "tokenizer;fuzz" TIMEOUT 180)
