# tests/tests.cmake — what every tests/<folder>/tests.cmake uses: the libraries by precision, mpiexec, and the mpi and gpu test helpers.
set(RINGGPT_LIB_f32 ringgpt_lib)
set(RINGGPT_LIB_f64 ringgpt_lib64)
# Open MPI refuses root without --allow-run-as-root and more ranks than cores without --oversubscribe.
set(RINGGPT_MPIEXEC ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe)

# ringgpt_mpi_test(NAME LABEL NP COMMAND...): COMMAND on NP ranks under mpiexec, one thread each (labels LABEL and mpi).
function(ringgpt_mpi_test name label np)
  add_test(NAME ${name} COMMAND ${RINGGPT_MPIEXEC} -np ${np} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "${label};mpi" ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 120)
endfunction()

# ringgpt_gpu_test(NAME TARGET ARGS...): a GPU test program (tests/gpu_test.h): without a device it prints SKIP and
# exits 77, which ctest reports as skipped, not passed.
function(ringgpt_gpu_test name target)
  add_test(NAME ${name} COMMAND ${target} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS gpu ENVIRONMENT "OMP_NUM_THREADS=4" TIMEOUT 600 SKIP_RETURN_CODE 77)
endfunction()
