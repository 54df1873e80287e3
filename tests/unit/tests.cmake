# tests/unit/tests.cmake — unit tests: gradient checks (double build), attention vs naive, CLI behaviour.
add_executable(test_grad ${CMAKE_SOURCE_DIR}/tests/unit/test_grad.c)
target_link_libraries(test_grad PRIVATE ringgpt_core64)
add_test(NAME unit_grad_check COMMAND test_grad)
set_tests_properties(unit_grad_check PROPERTIES LABELS unit ENVIRONMENT "OMP_NUM_THREADS=2")
add_executable(test_attention ${CMAKE_SOURCE_DIR}/tests/unit/test_attention.c)
target_link_libraries(test_attention PRIVATE ringgpt_core)
add_test(NAME unit_attention_vs_naive COMMAND test_attention)
set_tests_properties(unit_attention_vs_naive PROPERTIES LABELS unit ENVIRONMENT "OMP_NUM_THREADS=2")
