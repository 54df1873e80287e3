# tests/cli/tests.cmake — the command line: config files, resume/fine-tune without flags, defaults, exit codes, BLAS kernels, the README's commands, docs links.
set(CLI_T ${CMAKE_SOURCE_DIR}/tests/cli)
foreach(script config consistency scripts eval_run_flags plan inputs blas_kernels flags inspect bounds passkey_bpe)
  add_test(NAME cli_${script} COMMAND bash ${CLI_T}/${script}.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
  set_tests_properties(cli_${script} PROPERTIES LABELS cli TIMEOUT 120)
endforeach()
# eval, sample and passkey through the binary on rings of sp ranks = one rank; their bad input.
add_test(NAME cli_infer_over_ring COMMAND bash ${CLI_T}/infer_cli.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(cli_infer_over_ring PROPERTIES LABELS "cli;mpi" TIMEOUT 300)
add_test(NAME cli_corruption_sweep COMMAND python3 ${CLI_T}/corruption_sweep.py ${RINGGPT_BIN})
set_tests_properties(cli_corruption_sweep PROPERTIES LABELS cli TIMEOUT 120)
# A one-node Slurm started by the test; SKIP (77) with the reason where slurm-wlm is missing or cannot run.
add_test(NAME cli_slurm_srun COMMAND bash ${CLI_T}/slurm.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(cli_slurm_srun PROPERTIES LABELS cli TIMEOUT 300 SKIP_RETURN_CODE 77)
# scripts/long_context.sh at toy sizes through the built binary; SKIP (77) without a Python that has matplotlib.
add_test(NAME cli_long_context COMMAND bash ${CLI_T}/long_context.sh ${RINGGPT_BIN})
set_tests_properties(cli_long_context PROPERTIES LABELS cli TIMEOUT 420 SKIP_RETURN_CODE 77)
# Every ```sh block of the README, run in a scratch copy (GPU, Slurm and build blocks are marked and skipped).
add_test(NAME cli_readme_commands COMMAND bash ${CLI_T}/readme_commands.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(cli_readme_commands PROPERTIES LABELS cli TIMEOUT 600)
add_test(NAME cli_docs_links COMMAND python3 ${CLI_T}/docs_links.py ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_docs_links PROPERTIES LABELS cli TIMEOUT 30)
# A clone stands alone: nothing tracked names a path outside the repository (the workspace beside it, a machine's).
add_test(NAME cli_repo_paths COMMAND python3 ${CLI_T}/repo_paths.py ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_repo_paths PROPERTIES LABELS cli TIMEOUT 30)

# Bad input: one test per case; each must exit 2 with one line naming the problem.
set(BAD_DIR ${CMAKE_BINARY_DIR}/bad_input)
file(MAKE_DIRECTORY ${BAD_DIR})
file(WRITE ${BAD_DIR}/empty.txt "")
file(WRITE ${BAD_DIR}/short.txt "only a few bytes of text")
file(WRITE ${BAD_DIR}/ok.txt "some text that is long enough for a sequence of thirty-two tokens or so, and more")
set(OK ${BAD_DIR}/ok.txt)
file(WRITE ${BAD_DIR}/no_field.jsonl "{\"text\": \"a record\"}\n{\"id\": 2}\n")
file(WRITE ${BAD_DIR}/malformed.jsonl "{\"text\": \"a record\"}\n{\"text\": \"cut\n")
# Each case runs in a directory of its own: cases that get as far as claiming the default --out would otherwise
# meet each other's run lock under ctest -j ("--out out is being written by another ringgpt process").
function(bad_input name pattern)
  file(MAKE_DIRECTORY ${BAD_DIR}/${name})
  add_test(NAME cli_bad_input_${name} COMMAND bash ${CLI_T}/expect_exit.sh 2 "${pattern}" -- ${RINGGPT_BIN} ${ARGN}
           WORKING_DIRECTORY ${BAD_DIR}/${name})
  set_tests_properties(cli_bad_input_${name} PROPERTIES LABELS cli)
endfunction()
bad_input(unknown_flag "unknown flag '--bogus'" train --data ${OK} --bogus 3)
bad_input(missing_value "--steps needs a value" train --data ${OK} --steps)
bad_input(non_numeric "--lr expects a number" train --data ${OK} --lr fast)
bad_input(non_integer "--batch expects an integer" train --data ${OK} --batch 2.5)
bad_input(heads_kv_heads "not divisible by --kv-heads" train --data ${OK} --model tiny --heads 4 --kv-heads 3)
bad_input(dim_heads "not divisible by --heads" train --data ${OK} --model tiny --dim 66 --heads 4)
bad_input(odd_head_dim "is odd" train --data ${OK} --model tiny --dim 60 --heads 4 --kv-heads 4)
bad_input(empty_data "is empty" train --data ${BAD_DIR}/empty.txt --model tiny)
bad_input(missing_data "cannot open" train --data ${BAD_DIR}/does_not_exist.txt --model tiny)
bad_input(seq_len_too_long "fewer than --seq-len" train --data ${BAD_DIR}/short.txt --model tiny --seq-len 64)
bad_input(no_data_flag "--data is required" train --model tiny)
bad_input(unknown_model "unknown --model" train --data ${OK} --model huge)
bad_input(unknown_command "unknown command" trian)
bad_input(unknown_recompute "unknown --recompute 'some'" train --data ${OK} --model tiny --recompute some)
bad_input(unknown_matmul "--matmul fast: use tf32, bf16 or fp32" train --data ${OK} --model tiny --matmul fast)
bad_input(unknown_attn "--attn cudnn9: use flash" train --data ${OK} --model tiny --attn cudnn9)
if(NOT RINGGPT_HAVE_SM90)   # the Hopper kernels are an opt-in build (-DRINGGPT_SM90_KERNELS=ON, docs/gpu.md)
  bad_input(attn_sm90_not_built "--attn sm90: this ringgpt was built without the Hopper kernels" train --data ${OK}
            --model tiny --attn sm90)
endif()
bad_input(unknown_activations "--activations fp16: use fp32 or bf16" train --data ${OK} --model tiny --activations fp16)
bad_input(activations_bf16_tf32 "--activations bf16 runs the matmuls on bf16 operands" train --data ${OK} --model tiny
          --activations bf16 --matmul tf32)
bad_input(activations_bf16_cpu "--activations bf16 is a GPU setting" train --data ${OK} --model tiny --device cpu
          --activations bf16)
bad_input(unknown_comm "--comm tcp: use auto, nccl or mpi" train --data ${OK} --model tiny --comm tcp)
# prepare's corpora (tests/data/corpora.sh has the compressed ones: truncated and damaged gzip and zstd).
bad_input(prepare_jsonl_no_field "no_field.jsonl: line 2: the record needs a string field \"text\"" prepare --out out ${BAD_DIR}/no_field.jsonl)
bad_input(prepare_jsonl_malformed "malformed.jsonl: line 2: not valid JSON" prepare --out out ${BAD_DIR}/malformed.jsonl)
bad_input(prepare_doc_per "--doc-per must be file or dir, not 'repo'" prepare --out out --doc-per repo ${OK})
bad_input(prepare_shuffle_synthetic "--shuffle-docs orders the documents of input files" prepare --out out --synthetic passkey --shuffle-docs)
