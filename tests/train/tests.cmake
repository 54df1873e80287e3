# tests/train/tests.cmake — train/ through the binary: learning, determinism, recompute and resume, the memory plan, loss curves
# of every layout, learning across the ring, a rank that exits, stalls or is killed, a slowed rank named, ending on
# --stop-loss, a RoPE base ramp, every --shard level equal to the unsharded run over 6 layouts (and a rank killed mid-gather), RoPE scaling (--rope-scaling), stopping on a signal and resuming, the ring across two hosts made on this machine, the ring and every --shard level on one GPU.
set(TRAIN_T ${CMAKE_SOURCE_DIR}/tests/train)
foreach(script overfit determinism recompute memplan)
  add_test(NAME train_${script} COMMAND bash ${TRAIN_T}/${script}.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
  set_tests_properties(train_${script} PROPERTIES LABELS train TIMEOUT 180)
endforeach()
foreach(script loss_curve learn_across_ranks loss_mask_curve straggler stop_loss rope_ramp rope_scaling)
  add_test(NAME train_${script} COMMAND bash ${TRAIN_T}/${script}.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
  set_tests_properties(train_${script} PROPERTIES LABELS "train;mpi" TIMEOUT 180)
endforeach()
# --shard: every level against the unsharded run over 6 layouts (longer under the sanitizers: 35 runs of up to 8 ranks).
add_test(NAME train_shard COMMAND bash ${TRAIN_T}/shard.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(train_shard PROPERTIES LABELS "train;mpi" TIMEOUT 600)
# SIGTERM / SIGUSR1 / SIGINT at a random step, on one rank and on dp=2 x sp=2 under mpiexec; resume = uninterrupted.
add_test(NAME train_signals COMMAND bash ${TRAIN_T}/signals.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(train_signals PROPERTIES LABELS "train;mpi" TIMEOUT 600)
foreach(how exit stall kill gather)
  add_test(NAME train_rank_${how}s COMMAND bash ${TRAIN_T}/rank_failure.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE} ${how})
  set_tests_properties(train_rank_${how}s PROPERTIES LABELS "train;mpi" TIMEOUT 180)
endforeach()
# Two hosts (network namespaces, a shaped veth link, Open MPI over TCP); SKIP (77) with the reason where they cannot be made.
add_test(NAME train_two_hosts COMMAND bash ${TRAIN_T}/two_hosts.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
set_tests_properties(train_two_hosts PROPERTIES LABELS "train;mpi" TIMEOUT 240 SKIP_RETURN_CODE 77)
# The host script's refusals (no root, a bad flag) and its cleanup on a failing command and on SIGTERM.
add_test(NAME train_two_hosts_cleanup COMMAND bash ${TRAIN_T}/two_hosts_cleanup.sh)
set_tests_properties(train_two_hosts_cleanup PROPERTIES LABELS train TIMEOUT 60 SKIP_RETURN_CODE 77)
if(RINGGPT_HAVE_CUDA)
  add_test(NAME train_gpu_ring_sp2_one_gpu
           COMMAND bash ${TRAIN_T}/gpu_ring_sp2.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_gpu_ops>)
  set_tests_properties(train_gpu_ring_sp2_one_gpu PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77)
  add_test(NAME train_gpu_shard_one_gpu
           COMMAND bash ${TRAIN_T}/gpu_shard_one_gpu.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_gpu_ops>)
  set_tests_properties(train_gpu_shard_one_gpu PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
