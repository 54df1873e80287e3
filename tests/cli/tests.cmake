# tests/cli/tests.cmake — the command line: config files, resume/fine-tune without flags, defaults, exit codes, docs links.
set(CLI_T ${CMAKE_SOURCE_DIR}/tests/cli)
foreach(script config)
  add_test(NAME cli_${script} COMMAND bash ${CLI_T}/${script}.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
  set_tests_properties(cli_${script} PROPERTIES LABELS cli TIMEOUT 120)
endforeach()
