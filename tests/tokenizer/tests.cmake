# tests/tokenizer/tests.cmake — byte-level BPE (label `tokenizer`): ids identical to HF tokenizers, round trips, bad input.
foreach(script compat bad_input pipeline)
  add_test(NAME tokenizer_${script} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/tokenizer/${script}.sh ${RINGGPT_BIN})
  set_tests_properties(tokenizer_${script} PROPERTIES LABELS tokenizer TIMEOUT 180)
endforeach()
