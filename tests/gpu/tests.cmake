# tests/gpu/tests.cmake — GPU tests (label gpu): CUDA ops, attention, a step and a loss curve vs the CPU, the ring on one GPU.
# Each prints "SKIP: no CUDA device" and passes where no GPU is visible; a build without CUDA registers
# one test that says so.
if(RINGGPT_HAVE_CUDA)
  foreach(t test_gpu_ops test_gpu_attention test_gpu_model)
    add_executable(${t} ${CMAKE_SOURCE_DIR}/tests/gpu/${t}.c)
    target_link_libraries(${t} PRIVATE ringgpt_core ringgpt_cuda)
    add_test(NAME gpu_${t} COMMAND ${t})
    set_tests_properties(gpu_${t} PROPERTIES LABELS gpu ENVIRONMENT "OMP_NUM_THREADS=4" TIMEOUT 600)
  endforeach()
  add_test(NAME gpu_ring_sp2_one_gpu
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/gpu/ring_sp2.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE}
                   $<TARGET_FILE:test_gpu_ops>)
  set_tests_properties(gpu_ring_sp2_one_gpu PROPERTIES LABELS gpu TIMEOUT 600)
else()
  add_test(NAME gpu_skipped COMMAND sh -c "echo 'SKIP: this build has no CUDA backend (no nvcc, or -DRINGGPT_CUDA=OFF)'")
  set_tests_properties(gpu_skipped PROPERTIES LABELS gpu)
endif()
