# tests/attention/tests.cmake — attention/: blockwise = naive attention, the ring = one rank (under mpiexec), the CUDA kernels = the CPU's.
add_executable(test_attention ${CMAKE_SOURCE_DIR}/tests/attention/test_attention.c)
target_link_libraries(test_attention PRIVATE ringgpt_lib)
add_test(NAME attention_vs_naive COMMAND test_attention)
set_tests_properties(attention_vs_naive PROPERTIES LABELS attention ENVIRONMENT "OMP_NUM_THREADS=2")

# The ring (label mpi): per-rank O, LSE, dQ, dK, dV equal single-rank attention for sp ∈ {1,2,3,4,5,8}, the
# double build for exactness and the float (product) build at fp32 tolerance.
foreach(prec f32 f64)
  add_executable(test_ring_attention_${prec} ${CMAKE_SOURCE_DIR}/tests/attention/test_ring_attention.c)
  target_link_libraries(test_ring_attention_${prec} PRIVATE ${RINGGPT_LIB_${prec}})
  foreach(sp 1 2 3 4 5 8)
    add_test(NAME attention_ring_sp${sp}_${prec} COMMAND ${RINGGPT_MPIEXEC} -np ${sp} $<TARGET_FILE:test_ring_attention_${prec}>)
    set_tests_properties(attention_ring_sp${sp}_${prec} PROPERTIES LABELS "attention;mpi" ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 120)
  endforeach()
endforeach()

# The ring's timing model against the schedule's own counts (no MPI).
add_executable(test_ring_model ${CMAKE_SOURCE_DIR}/tests/attention/test_ring_model.c)
target_link_libraries(test_ring_model PRIVATE ringgpt_lib)
add_test(NAME attention_ring_model COMMAND test_ring_model)
set_tests_properties(attention_ring_model PROPERTIES LABELS attention)

# GPU (label gpu; SKIP without a device, reported as skipped): the CUDA blocks against the CPU's for every ring
# case, the Hopper kernels against both, the sm_80 test's cases again on the Hopper kernels, and their SASS.
if(RINGGPT_HAVE_CUDA)
  foreach(t test_gpu_attention test_gpu_attention_sm90)
    add_executable(${t} ${CMAKE_SOURCE_DIR}/tests/attention/${t}.c)
    target_link_libraries(${t} PRIVATE ringgpt_lib)
  endforeach()
  ringgpt_gpu_test(attention_gpu_vs_cpu test_gpu_attention)
  ringgpt_gpu_test(attention_gpu_sm90_kernels test_gpu_attention_sm90)
  ringgpt_gpu_test(attention_gpu_vs_cpu_on_sm90 test_gpu_attention --attn sm90)
  # No GPU needed: the sm_90a code is wgmma + TMA + mbarrier code without spills (SKIP without cuobjdump).
  find_program(CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR})
  add_test(NAME attention_gpu_sm90_sass
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/attention/check_sm90_sass.sh "${CUOBJDUMP}" $<TARGET_FILE:rg_attention>)
  set_tests_properties(attention_gpu_sm90_sass PROPERTIES LABELS "attention;gpu" TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
