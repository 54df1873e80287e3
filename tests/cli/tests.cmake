# tests/cli/tests.cmake — the command line: config files, resume/fine-tune without flags, defaults, exit codes, the README's commands, docs links.
set(CLI_T ${CMAKE_SOURCE_DIR}/tests/cli)
foreach(script config consistency scripts)
  add_test(NAME cli_${script} COMMAND bash ${CLI_T}/${script}.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
  set_tests_properties(cli_${script} PROPERTIES LABELS cli TIMEOUT 120)
endforeach()
add_test(NAME cli_corruption_sweep COMMAND python3 ${CLI_T}/corruption_sweep.py ${RINGGPT_BIN})
set_tests_properties(cli_corruption_sweep PROPERTIES LABELS cli TIMEOUT 120)
# A one-node Slurm started by the test; SKIP (77) with the reason where slurm-wlm is missing or cannot run.
add_test(NAME cli_slurm_srun COMMAND bash ${CLI_T}/slurm.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(cli_slurm_srun PROPERTIES LABELS cli TIMEOUT 120 SKIP_RETURN_CODE 77)
# scripts/long_context.sh at toy sizes through the built binary; SKIP (77) without a Python that has matplotlib.
add_test(NAME cli_long_context COMMAND bash ${CLI_T}/long_context.sh ${RINGGPT_BIN})
set_tests_properties(cli_long_context PROPERTIES LABELS cli TIMEOUT 180 SKIP_RETURN_CODE 77)
# Every ```sh block of the README, run in a scratch copy (GPU, Slurm and build blocks are marked and skipped).
add_test(NAME cli_readme_commands COMMAND bash ${CLI_T}/readme_commands.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(cli_readme_commands PROPERTIES LABELS cli TIMEOUT 120)
add_test(NAME cli_docs_links COMMAND python3 ${CLI_T}/docs_links.py ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_docs_links PROPERTIES LABELS cli TIMEOUT 30)
