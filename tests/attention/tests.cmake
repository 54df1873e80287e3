# tests/attention/tests.cmake — attention/: blockwise = naive attention, the ring = one rank (under mpiexec), cuDNN's planning, the CUDA kernels = the CPU's (the Hopper ones with -DRINGGPT_SM90_KERNELS=ON).
add_executable(test_attention ${CMAKE_SOURCE_DIR}/tests/attention/test_attention.c)
target_link_libraries(test_attention PRIVATE ringgpt_lib)
add_test(NAME attention_vs_naive COMMAND test_attention)
set_tests_properties(attention_vs_naive PROPERTIES LABELS attention ENVIRONMENT "OMP_NUM_THREADS=2")

# The ring (label mpi): per-rank O, LSE, dQ, dK, dV equal single-rank attention for sp ∈ {1,2,3,4,5,8}, under the
# zigzag and other layouts (the pairwise exchange), the double build for exactness and the float (product) build at
# fp32 tolerance.
foreach(prec f32 f64)
  add_executable(test_ring_attention_${prec} ${CMAKE_SOURCE_DIR}/tests/attention/test_ring_attention.c)
  target_link_libraries(test_ring_attention_${prec} PRIVATE ${RINGGPT_LIB_${prec}})
  foreach(sp 1 2 3 4 5 8)
    add_test(NAME attention_ring_sp${sp}_${prec} COMMAND ${RINGGPT_MPIEXEC} -np ${sp} $<TARGET_FILE:test_ring_attention_${prec}>)
    set_tests_properties(attention_ring_sp${sp}_${prec} PROPERTIES LABELS "attention;mpi" ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 120)
  endforeach()
endforeach()

# Ulysses and the hybrid (label mpi): per-rank O, LSE, dQ, dK, dV equal single-rank attention in position order for
# sp ∈ {1,2,4}, every degree that divides sp, zigzag, contiguous and random layouts, document mixes, GQA and MQA; the
# double build for exactness, the float build at fp32 tolerance. Heads that do not divide: exit 2 and the fix.
foreach(prec f32 f64)
  add_executable(test_ulysses_attention_${prec} ${CMAKE_SOURCE_DIR}/tests/attention/test_ulysses_attention.c)
  target_link_libraries(test_ulysses_attention_${prec} PRIVATE ${RINGGPT_LIB_${prec}})
  foreach(sp 1 2 4)
    ringgpt_mpi_test(attention_ulysses_sp${sp}_${prec} attention ${sp} $<TARGET_FILE:test_ulysses_attention_${prec}>)
  endforeach()
endforeach()
# The same cases on the GPU against the GPU's own one-rank attention, q, k, v fp32 and bf16 (label gpu; SKIP without a
# device): 2 ranks, through NCCL where each has a GPU, else MPI with host staging.
if(RINGGPT_HAVE_CUDA)
  foreach(store f32 bf16)
    add_test(NAME attention_gpu_ulysses_sp2_${store}
             COMMAND ${RINGGPT_MPIEXEC} -np 2 $<TARGET_FILE:test_ulysses_attention_f32> --gpu --activations ${store})
    set_tests_properties(attention_gpu_ulysses_sp2_${store} PROPERTIES LABELS "attention;gpu;mpi" ENVIRONMENT "OMP_NUM_THREADS=1"
                         TIMEOUT 300 SKIP_RETURN_CODE 77)
  endforeach()
endif()
add_test(NAME attention_ulysses_heads_error
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/expect_exit.sh 2 "divide" -- $<TARGET_FILE:test_ulysses_attention_f32> --heads-error)
set_tests_properties(attention_ulysses_heads_error PROPERTIES LABELS attention TIMEOUT 60)

# The ring's timing model against the schedule's own counts (no MPI).
add_executable(test_ring_model ${CMAKE_SOURCE_DIR}/tests/attention/test_ring_model.c)
target_link_libraries(test_ring_model PRIVATE ringgpt_lib)
add_test(NAME attention_ring_model COMMAND test_ring_model)
set_tests_properties(attention_ring_model PROPERTIES LABELS attention)

# The overlap benchmark's paired mode (bench/ring_overlap --paired, two ranks): both lines and their figures.
add_test(NAME attention_ring_overlap_paired
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/attention/ring_overlap_paired.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:ring_overlap>)
set_tests_properties(attention_ring_overlap_paired PROPERTIES LABELS "attention;mpi" TIMEOUT 120)

# cuDNN attention's host-side planning (attention/sdpa_plan.c, plain C): every build, no GPU.
add_executable(test_sdpa_plan ${CMAKE_SOURCE_DIR}/tests/attention/test_sdpa_plan.c)
target_link_libraries(test_sdpa_plan PRIVATE ringgpt_lib)
add_test(NAME attention_cudnn_plan COMMAND test_sdpa_plan)
set_tests_properties(attention_cudnn_plan PROPERTIES LABELS attention)

# GPU (label gpu; SKIP without a device, reported as skipped): the CUDA blocks against the CPU's for every ring
# case, cuDNN's (and, in a -DRINGGPT_SM90_KERNELS=ON build, the Hopper kernels') against both, the flash test's
# cases again on each of them, and SASS.
if(RINGGPT_HAVE_CUDA)
  add_executable(test_gpu_attention ${CMAKE_SOURCE_DIR}/tests/attention/test_gpu_attention.c)
  target_link_libraries(test_gpu_attention PRIVATE ringgpt_lib)
  ringgpt_gpu_test(attention_gpu_vs_cpu test_gpu_attention)
  if(RINGGPT_HAVE_CUDNN)
    add_executable(test_gpu_attention_cudnn ${CMAKE_SOURCE_DIR}/tests/attention/test_gpu_attention_cudnn.c)
    target_link_libraries(test_gpu_attention_cudnn PRIVATE ringgpt_lib)
    ringgpt_gpu_test(attention_gpu_cudnn_blocks test_gpu_attention_cudnn)
    ringgpt_gpu_test(attention_gpu_vs_cpu_on_cudnn test_gpu_attention --attn cudnn)
    # the same blocks with every backward cut into 64 x 64 sub-blocks (what a long block does past the workspace budget)
    ringgpt_gpu_test(attention_gpu_cudnn_blocks_tiled test_gpu_attention_cudnn)
    set_tests_properties(attention_gpu_cudnn_blocks_tiled PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=4;RINGGPT_CUDNN_BWD_TILE=64")
    # No GPU needed: the configured cuDNN loads at run time (SKIP where the library is absent).
    add_executable(test_cudnn_load ${CMAKE_SOURCE_DIR}/tests/attention/test_cudnn_load.c)
    target_link_libraries(test_cudnn_load PRIVATE ringgpt_lib)
    target_include_directories(test_cudnn_load PRIVATE ${CUDNN_INCLUDE_DIR})
    add_test(NAME attention_cudnn_loads COMMAND test_cudnn_load)
    set_tests_properties(attention_cudnn_loads PROPERTIES LABELS attention TIMEOUT 60 SKIP_RETURN_CODE 77)
  else()
    add_test(NAME attention_gpu_cudnn_not_built
             COMMAND sh -c "echo 'SKIP: this build has no cuDNN path (cudnn.h or the cuDNN frontend headers not found)'; exit 77")
    set_tests_properties(attention_gpu_cudnn_not_built PROPERTIES LABELS "attention;gpu" SKIP_RETURN_CODE 77)
  endif()
  # No GPU needed (SKIP without cuobjdump): every CUDA kernel of the attention and model libraries is free of
  # local memory with 16-byte accesses where it vectorizes.
  find_program(CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR} ${RINGGPT_PIP_NVIDIA_BIN})
  add_test(NAME cuda_kernels_sass
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/check_kernels_sass.sh "${CUOBJDUMP}" $<TARGET_FILE:rg_attention>
                   $<TARGET_FILE:rg_model>)
  set_tests_properties(cuda_kernels_sass PROPERTIES LABELS "attention;model;gpu" TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()

# The Hopper kernels (-DRINGGPT_SM90_KERNELS=ON only): against the sm_80 kernels and the CPU, the flash test's
# cases on them, and (no GPU needed) their sm_90a code is wgmma + TMA + mbarrier code without spills.
if(RINGGPT_HAVE_SM90)
  add_executable(test_gpu_attention_sm90 ${CMAKE_SOURCE_DIR}/tests/attention/test_gpu_attention_sm90.c)
  target_link_libraries(test_gpu_attention_sm90 PRIVATE ringgpt_lib)
  ringgpt_gpu_test(attention_gpu_sm90_kernels test_gpu_attention_sm90)
  ringgpt_gpu_test(attention_gpu_vs_cpu_on_sm90 test_gpu_attention --attn sm90)
  add_test(NAME attention_gpu_sm90_sass
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/attention/check_sm90_sass.sh "${CUOBJDUMP}" $<TARGET_FILE:rg_attention>)
  set_tests_properties(attention_gpu_sm90_sass PROPERTIES LABELS "attention;gpu" TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
