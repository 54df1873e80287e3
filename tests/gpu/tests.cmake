# tests/gpu/tests.cmake — GPU tests (label gpu): CUDA ops, bf16 GEMMs and their weight shadow, attention (sm_80 and sm_90a kernels), a step and a loss curve vs the CPU, the ring on one GPU.
# Each prints "SKIP: no CUDA device" and passes where no GPU is visible; a build without CUDA registers
# one test that says so.
if(RINGGPT_HAVE_CUDA)
  foreach(t test_gpu_ops test_gpu_bf16 test_gpu_attention test_gpu_attention_sm90 test_gpu_model)
    add_executable(${t} ${CMAKE_SOURCE_DIR}/tests/gpu/${t}.c)
    target_link_libraries(${t} PRIVATE ringgpt_core ringgpt_cuda)
    add_test(NAME gpu_${t} COMMAND ${t})
    set_tests_properties(gpu_${t} PROPERTIES LABELS gpu ENVIRONMENT "OMP_NUM_THREADS=4" TIMEOUT 600)
  endforeach()
  # The sm_80 test's ring cases again with RINGGPT_ATTN=sm90: hd 64/128 run the Hopper kernels on an sm_90 GPU.
  add_test(NAME gpu_test_gpu_attention_env_sm90 COMMAND test_gpu_attention)
  set_tests_properties(gpu_test_gpu_attention_env_sm90 PROPERTIES LABELS gpu ENVIRONMENT "OMP_NUM_THREADS=4;RINGGPT_ATTN=sm90"
                       TIMEOUT 600)
  # No GPU needed: the sm_90a attention kernels are wgmma + TMA + mbarrier code without spills (SKIPs without cuobjdump).
  find_program(CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR})
  add_test(NAME gpu_sm90_sass COMMAND bash ${CMAKE_SOURCE_DIR}/tests/gpu/check_sm90_sass.sh "${CUOBJDUMP}"
                                      $<TARGET_FILE:ringgpt_cuda>)
  set_tests_properties(gpu_sm90_sass PROPERTIES LABELS gpu TIMEOUT 120)
  add_test(NAME gpu_ring_sp2_one_gpu
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/gpu/ring_sp2.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE}
                   $<TARGET_FILE:test_gpu_ops>)
  set_tests_properties(gpu_ring_sp2_one_gpu PROPERTIES LABELS gpu TIMEOUT 600)
else()
  add_test(NAME gpu_skipped COMMAND sh -c "echo 'SKIP: this build has no CUDA backend (no nvcc, or -DRINGGPT_CUDA=OFF)'")
  set_tests_properties(gpu_skipped PROPERTIES LABELS gpu)
endif()
