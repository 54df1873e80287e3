# tests/tokenizer/tests.cmake — tokenizer/: ids = HF tokenizers, bad tokenizer.json and tokenizer-command input, a BPE end to end
# (prepare, train, eval, sample, export, import), and libFuzzer on the tokenizer.json parser.
foreach(name compat bad_input pipeline)
  add_test(NAME tokenizer_${name} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/tokenizer/tokenizer_${name}.sh ${RINGGPT_BIN})
  set_tests_properties(tokenizer_${name} PROPERTIES LABELS tokenizer TIMEOUT 180 SKIP_RETURN_CODE 77)
endforeach()
set_tests_properties(tokenizer_compat PROPERTIES TIMEOUT 400)   # ten HF-trained tokenizers, 2 MB each
# SKIP (77) without clang's libFuzzer runtime; bench/fuzz.sh runs it for 10 million executions.
add_test(NAME tokenizer_fuzz_json
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/tokenizer/fuzz_tokenizer.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 15 ${RINGGPT_BIN})
set_tests_properties(tokenizer_fuzz_json PROPERTIES LABELS "tokenizer;fuzz" TIMEOUT 180 SKIP_RETURN_CODE 77)
