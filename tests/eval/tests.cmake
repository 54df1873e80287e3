# tests/eval/tests.cmake — eval/ called as a library: the passkey grid (parsing, checks, documents, table, scores), loss evaluation, sampling.
set(EVAL_T ${CMAKE_SOURCE_DIR}/tests/eval)
add_executable(test_eval_unit ${EVAL_T}/test_eval_unit.c)
target_link_libraries(test_eval_unit PRIVATE ringgpt_lib)
add_test(NAME eval_unit COMMAND test_eval_unit)
set_tests_properties(eval_unit PROPERTIES LABELS eval ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 60)
