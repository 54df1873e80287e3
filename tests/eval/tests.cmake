# tests/eval/tests.cmake — eval/ called as a library: the passkey grid (parsing, checks, documents, table, scores), loss evaluation, sampling; RULER's tasks as text.
set(EVAL_T ${CMAKE_SOURCE_DIR}/tests/eval)
add_executable(test_eval_unit ${EVAL_T}/test_eval_unit.c)
target_link_libraries(test_eval_unit PRIVATE ringgpt_lib)
add_test(NAME eval_unit COMMAND test_eval_unit)
set_tests_properties(eval_unit PROPERTIES LABELS eval ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 60)
# Passkey documents in a BPE tokenizer's tokens (two tokenizers trained by `ringgpt tokenizer train` in the test).
add_executable(test_passkey_text ${EVAL_T}/test_passkey_text.c)
target_link_libraries(test_passkey_text PRIVATE ringgpt_lib)
add_test(NAME eval_passkey_text COMMAND bash ${EVAL_T}/passkey_text.sh ${RINGGPT_BIN} $<TARGET_FILE:test_passkey_text> ${CMAKE_SOURCE_DIR})
set_tests_properties(eval_passkey_text PROPERTIES LABELS eval TIMEOUT 120)
add_executable(test_ruler ${EVAL_T}/test_ruler.c)
target_link_libraries(test_ruler PRIVATE ringgpt_lib)
add_test(NAME eval_ruler COMMAND test_ruler)
set_tests_properties(eval_ruler PROPERTIES LABELS eval TIMEOUT 120)
# `ringgpt ruler` through the binary on a tiny model: table, results.json, determinism, a ring of 2, bad arguments.
add_test(NAME eval_ruler_cli COMMAND bash ${EVAL_T}/ruler_cli.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(eval_ruler_cli PROPERTIES LABELS "eval;cli;mpi" TIMEOUT 300)
