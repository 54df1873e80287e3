# tests/model/tests.cmake — model/: finite-difference gradients (double build), the model on a dp × sp grid, decoding = the
# training forward, document masks, recompute, and the CUDA ops = the CPU's.
add_executable(test_grad ${CMAKE_SOURCE_DIR}/tests/model/test_grad.c)
target_link_libraries(test_grad PRIVATE ringgpt_lib64)
add_test(NAME model_grad_check COMMAND test_grad)
set_tests_properties(model_grad_check PROPERTIES LABELS model ENVIRONMENT "OMP_NUM_THREADS=2")

foreach(prec f32 f64)
  foreach(t test_ring_model test_decode test_doc_mask test_cp_model)
    add_executable(${t}_${prec} ${CMAKE_SOURCE_DIR}/tests/model/${t}.c)
    target_link_libraries(${t}_${prec} PRIVATE ${RINGGPT_LIB_${prec}})
  endforeach()
  # One training step (loss, every named gradient) on sp ∈ {2,3,4} and dp×sp = 2×2 = one rank's.
  foreach(layout "2;2" "3;3" "4;4" "4;2")
    list(GET layout 0 np)
    list(GET layout 1 sp)
    math(EXPR dp "${np} / ${sp}")
    ringgpt_mpi_test(model_ring_dp${dp}_sp${sp}_${prec} model ${np} $<TARGET_FILE:test_ring_model_${prec}> ${sp})
  endforeach()
  # Decoding (prefill, then one token at a time through the same block with the KV cache sharded over sp ∈ {1,2,3,4})
  # gives the training forward's logits at every position.
  foreach(sp 1 2 3 4)
    ringgpt_mpi_test(model_decode_sp${sp}_${prec} model ${sp} $<TARGET_FILE:test_decode_${prec}>)
  endforeach()
  # Context parallelism (--cp ring|ulysses|hybrid × --placement zigzag|cost × every --recompute, document masks): one step
  # equals one rank's, dp×sp ∈ {1×2, 1×4, 2×2}; the step's memory within the plan.
  foreach(layout "2;2" "4;4" "4;2")
    list(GET layout 0 np)
    list(GET layout 1 sp)
    math(EXPR dp "${np} / ${sp}")
    ringgpt_mpi_test(model_cp_dp${dp}_sp${sp}_${prec} model ${np} $<TARGET_FILE:test_cp_model_${prec}> ${sp})
  endforeach()
  # --doc-mask: a packed window equals its documents trained alone, sp ∈ {1,2,3}; the ring skips the predicted block calls.
  foreach(sp 1 2 3)
    ringgpt_mpi_test(model_doc_mask_sp${sp}_${prec} model ${sp} $<TARGET_FILE:test_doc_mask_${prec}> ${sp})
  endforeach()
endforeach()

# Activation recompute: mlp and full give gradients bit-identical to none (fp32), with the same ring exchanges and the
# memory plan's byte counts; one rank, sp 2 and 3, dp×sp 2×2.
add_executable(test_recompute ${CMAKE_SOURCE_DIR}/tests/model/test_recompute.c)
target_link_libraries(test_recompute PRIVATE ringgpt_lib)
add_test(NAME model_recompute_1rank COMMAND test_recompute 1)
set_tests_properties(model_recompute_1rank PROPERTIES LABELS model ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 120)
foreach(layout "2;2" "3;3" "4;2")
  list(GET layout 0 np)
  list(GET layout 1 sp)
  math(EXPR dp "${np} / ${sp}")
  ringgpt_mpi_test(model_recompute_dp${dp}_sp${sp} model ${np} $<TARGET_FILE:test_recompute> ${sp})
endforeach()

# GPU (label gpu; SKIP without a device): every CUDA op, the bf16 GEMMs and their weight shadow, the fused kernels
# against the unfused calls and the CPU and the bf16 activation storage, a whole step and a 200-step loss curve
# against the CPU.
if(RINGGPT_HAVE_CUDA)
  foreach(t test_gpu_ops test_gpu_bf16 test_gpu_model test_gpu_fused)
    add_executable(${t} ${CMAKE_SOURCE_DIR}/tests/model/${t}.c)
    target_link_libraries(${t} PRIVATE ringgpt_lib)
  endforeach()
  ringgpt_gpu_test(model_gpu_ops test_gpu_ops)
  ringgpt_gpu_test(model_gpu_bf16 test_gpu_bf16)
  ringgpt_gpu_test(model_gpu_fused test_gpu_fused)
  ringgpt_gpu_test(model_gpu_step_and_curve test_gpu_model)
  # The same step and curve with bf16 GEMMs and bf16 activations (--activations bf16), and on cuDNN's attention.
  ringgpt_gpu_test(model_gpu_step_and_curve_bf16 test_gpu_model --activations bf16)
  if(RINGGPT_HAVE_CUDNN)
    ringgpt_gpu_test(model_gpu_step_and_curve_cudnn test_gpu_model --attn cudnn)
    ringgpt_gpu_test(model_gpu_step_and_curve_cudnn_bf16 test_gpu_model --attn cudnn --activations bf16)
  endif()
else()
  add_test(NAME gpu_not_built COMMAND sh -c "echo 'SKIP: this build has no CUDA backend (no nvcc, or -DRINGGPT_CUDA=OFF)'; exit 77")
  set_tests_properties(gpu_not_built PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endif()

# RoPE scaling (linear, dynamic, yarn, llama3): the table of inverse frequencies and the cos/sin scale = a numpy
# transcription of transformers' modeling_rope_utils (scripts/check_hf_export.py), and = transformers' own functions
# where torch and transformers import; --rope-scaling text -> record -> text is exact.
add_executable(test_rope_table ${CMAKE_SOURCE_DIR}/tests/model/test_rope_table.c)
target_link_libraries(test_rope_table PRIVATE ringgpt_lib)
add_test(NAME model_rope_table COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/model/rope_table.py $<TARGET_FILE:test_rope_table>)
set_tests_properties(model_rope_table PROPERTIES LABELS model TIMEOUT 120 SKIP_RETURN_CODE 77)

# The plans: presets against HF's parameter counts, the memory plan's shard levels, the step plan's shard traffic.
add_executable(test_plan ${CMAKE_SOURCE_DIR}/tests/model/test_plan.c)
target_link_libraries(test_plan PRIVATE ringgpt_lib)
add_test(NAME model_plan COMMAND test_plan)
set_tests_properties(model_plan PROPERTIES LABELS model)
