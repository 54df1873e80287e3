# tests/checkpoints/tests.cmake — checkpoints: safetensors and format units, sharded checkpoints, bit-exact resume, layouts, crashes, corruption, HF export, fine-tune, HF metadata,
# run directories (one run each, the lock, resume semantics, a full disk).
set(CKPT_T ${CMAKE_SOURCE_DIR}/tests/checkpoints)
add_executable(test_ckpt_unit ${CKPT_T}/test_ckpt_unit.c)
target_link_libraries(test_ckpt_unit PRIVATE ringgpt_lib)
add_test(NAME checkpoints_unit COMMAND test_ckpt_unit)
set_tests_properties(checkpoints_unit PROPERTIES LABELS checkpoints ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 60)
# Sharded checkpoints: test_ckpt_shard saves on 1, 2, 3, 4 ranks and loads into every layout of 1..5 ranks at every level;
# shard.sh adds inspect, export, train --resume from a resharded run's checkpoint, and damaged shards.
add_executable(test_ckpt_shard ${CKPT_T}/test_ckpt_shard.c)
target_link_libraries(test_ckpt_shard PRIVATE ringgpt_lib)
add_test(NAME checkpoints_shard COMMAND bash ${CKPT_T}/shard.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_ckpt_shard>)
set_tests_properties(checkpoints_shard PROPERTIES LABELS "checkpoints;mpi" TIMEOUT 180)
# train --shard's checkpoints: resumed on the same layout (byte for byte), unsharded, and on 1 and 4 ranks at other levels;
# --init-from the shards. SKIP (77) where train has no --shard.
add_test(NAME checkpoints_shard_train COMMAND bash ${CKPT_T}/shard_train.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(checkpoints_shard_train PROPERTIES LABELS "checkpoints;mpi" TIMEOUT 180)

foreach(script resume_exact resume_layout crash corruption hf_export finetune run_dir hf_meta)
  add_test(NAME checkpoints_${script} COMMAND bash ${CKPT_T}/${script}.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
  set_tests_properties(checkpoints_${script} PROPERTIES LABELS checkpoints TIMEOUT 180)
endforeach()
# HF rope_scaling (llama3 as Llama 3.2's, linear, dynamic, yarn) imported, evaluated beyond the original context = an
# independent forward (and LlamaForCausalLM where installed), exported back; SKIP (77) without a python3 with numpy.
add_test(NAME checkpoints_rope_scaling COMMAND bash ${CKPT_T}/rope_scaling.sh ${RINGGPT_BIN})
set_tests_properties(checkpoints_rope_scaling PROPERTIES LABELS checkpoints TIMEOUT 300 SKIP_RETURN_CODE 77)
# hf_meta needs HF `tokenizers` in python3 (scripts/deps.sh): SKIP 77 without it.
set_tests_properties(checkpoints_hf_meta PROPERTIES SKIP_RETURN_CODE 77)
# The user flow for each tokenizer kind (SmolLM2's byte-level, Llama 2's and Mistral's SentencePiece-style): import -> eval,
# sample = the numpy forward -> fine-tune with --rope-scaling -> passkey -> export; SKIP 77 without numpy and HF `tokenizers`.
add_test(NAME checkpoints_user_flow COMMAND bash ${CKPT_T}/user_flow.sh ${RINGGPT_BIN})
set_tests_properties(checkpoints_user_flow PROPERTIES LABELS checkpoints TIMEOUT 180)
# libFuzzer on each parser of checkpoints/ for a few seconds (label fuzz; SKIP 77 without clang's libFuzzer runtime):
# MANIFEST.json beside a real checkpoint, state.json, safetensors files, HF config.json. bench/fuzz.sh: 10 M executions each.
foreach(target manifest state safetensors hf_config)
  add_test(NAME checkpoints_fuzz_${target}
           COMMAND bash ${CKPT_T}/fuzz_ckpt.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 10 ${RINGGPT_BIN} ${target})
  set_tests_properties(checkpoints_fuzz_${target} PROPERTIES LABELS "checkpoints;fuzz" TIMEOUT 180)
endforeach()
