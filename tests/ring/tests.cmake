# tests/ring/tests.cmake — ring attention under mpiexec: attention-level equivalence, model level, training, faults.
# Open MPI refuses root without --allow-run-as-root and more ranks than cores without --oversubscribe.
set(RING_MPIEXEC ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe)
set(RING_ENV "OMP_NUM_THREADS=1")

foreach(prec core core64)
  add_executable(test_ring_attention_${prec} ${CMAKE_SOURCE_DIR}/tests/ring/test_ring_attention.c)
  target_link_libraries(test_ring_attention_${prec} PRIVATE ringgpt_${prec})
endforeach()
# sp ∈ {1,2,3,4,5,8}: the double build for exactness, the float (product) build at fp32 tolerance.
foreach(sp 1 2 3 4 5 8)
  foreach(prec core64 core)
    add_test(NAME ring_attention_sp${sp}_${prec}
             COMMAND ${RING_MPIEXEC} -np ${sp} $<TARGET_FILE:test_ring_attention_${prec}>)
    set_tests_properties(ring_attention_sp${sp}_${prec} PROPERTIES LABELS ring ENVIRONMENT "${RING_ENV}" TIMEOUT 120)
  endforeach()
endforeach()

# Model level: loss and every named gradient after one step, sp ∈ {2,3,4} and dp×sp = 2×2, vs one rank.
foreach(prec core64 core)
  add_executable(test_ring_model_${prec} ${CMAKE_SOURCE_DIR}/tests/ring/test_ring_model.c)
  target_link_libraries(test_ring_model_${prec} PRIVATE ringgpt_${prec})
  foreach(layout "2;2" "3;3" "4;4" "4;2")
    list(GET layout 0 np)
    list(GET layout 1 sp)
    math(EXPR dp "${np} / ${sp}")
    add_test(NAME ring_model_dp${dp}_sp${sp}_${prec}
             COMMAND ${RING_MPIEXEC} -np ${np} $<TARGET_FILE:test_ring_model_${prec}> ${sp})
    set_tests_properties(ring_model_dp${dp}_sp${sp}_${prec} PROPERTIES LABELS ring ENVIRONMENT "${RING_ENV}" TIMEOUT 120)
  endforeach()
endforeach()

# Inference: block prefill + decoding with the KV cache sharded over sp ∈ {1,2,3,4} ranks = one rank's logits.
foreach(prec core64 core)
  add_executable(test_ring_infer_${prec} ${CMAKE_SOURCE_DIR}/tests/ring/test_ring_infer.c)
  target_link_libraries(test_ring_infer_${prec} PRIVATE ringgpt_${prec})
  foreach(sp 1 2 3 4)
    add_test(NAME ring_infer_sp${sp}_${prec} COMMAND ${RING_MPIEXEC} -np ${sp} $<TARGET_FILE:test_ring_infer_${prec}>)
    set_tests_properties(ring_infer_sp${sp}_${prec} PROPERTIES LABELS ring ENVIRONMENT "${RING_ENV}" TIMEOUT 120)
  endforeach()
endforeach()

# --doc-mask: a packed window equals its documents trained alone, sp ∈ {1,2,3}; the ring skips the predicted block calls.
foreach(prec core64 core)
  add_executable(test_doc_mask_${prec} ${CMAKE_SOURCE_DIR}/tests/ring/test_doc_mask.c)
  target_link_libraries(test_doc_mask_${prec} PRIVATE ringgpt_${prec})
  foreach(sp 1 2 3)
    add_test(NAME ring_doc_mask_sp${sp}_${prec} COMMAND ${RING_MPIEXEC} -np ${sp} $<TARGET_FILE:test_doc_mask_${prec}> ${sp})
    set_tests_properties(ring_doc_mask_sp${sp}_${prec} PROPERTIES LABELS ring ENVIRONMENT "${RING_ENV}" TIMEOUT 120)
  endforeach()
endforeach()

# Through the binary: 20-step loss curves, learning across ranks, a rank that exits or stalls.
set(RING_SH ${CMAKE_SOURCE_DIR}/tests/ring)
add_test(NAME ring_loss_curve_20_steps COMMAND bash ${RING_SH}/loss_curve.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
add_test(NAME ring_learns_across_ranks_sp4 COMMAND bash ${RING_SH}/learn_across_ranks.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
add_test(NAME ring_loss_mask_curve COMMAND bash ${RING_SH}/loss_mask_curve.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
add_test(NAME ring_infer_cli COMMAND bash ${RING_SH}/infer_cli.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(ring_infer_cli PROPERTIES LABELS ring TIMEOUT 300)
add_test(NAME ring_rank_exits COMMAND bash ${RING_SH}/rank_failure.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE} exit)
add_test(NAME ring_rank_stalls COMMAND bash ${RING_SH}/rank_failure.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE} stall)
set_tests_properties(ring_loss_curve_20_steps ring_loss_mask_curve ring_learns_across_ranks_sp4 ring_rank_exits ring_rank_stalls
                     PROPERTIES LABELS ring TIMEOUT 180)

# Activation recompute: mlp and full give gradients bit-identical to none (fp32), with the same ring
# exchanges and the memory plan's byte counts; one rank, sp 2 and 3, dp×sp 2×2.
add_executable(test_recompute ${CMAKE_SOURCE_DIR}/tests/ring/test_recompute.c)
target_link_libraries(test_recompute PRIVATE ringgpt_core)
add_test(NAME recompute_bit_identical_1rank COMMAND test_recompute 1)
foreach(layout "2;2" "3;3" "4;2")
  list(GET layout 0 np)
  list(GET layout 1 sp)
  math(EXPR dp "${np} / ${sp}")
  add_test(NAME recompute_bit_identical_dp${dp}_sp${sp}
           COMMAND ${RING_MPIEXEC} -np ${np} $<TARGET_FILE:test_recompute> ${sp})
endforeach()
set_tests_properties(recompute_bit_identical_1rank recompute_bit_identical_dp1_sp2 recompute_bit_identical_dp1_sp3
                     recompute_bit_identical_dp2_sp2 PROPERTIES LABELS ring ENVIRONMENT "${RING_ENV}" TIMEOUT 120)
