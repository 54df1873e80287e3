# tests/checkpoints/tests.cmake — checkpoints: safetensors and format units, bit-exact resume, layouts, crashes, corruption, HF export, fine-tune.
set(CKPT_T ${CMAKE_SOURCE_DIR}/tests/checkpoints)
add_executable(test_ckpt_unit ${CKPT_T}/test_ckpt_unit.c)
target_link_libraries(test_ckpt_unit PRIVATE ringgpt_lib)
add_test(NAME checkpoints_unit COMMAND test_ckpt_unit)
set_tests_properties(checkpoints_unit PROPERTIES LABELS checkpoints ENVIRONMENT "OMP_NUM_THREADS=1" TIMEOUT 60)

foreach(script resume_exact resume_layout crash corruption hf_export finetune)
  add_test(NAME checkpoints_${script} COMMAND bash ${CKPT_T}/${script}.sh ${RINGGPT_BIN} ${MPIEXEC_EXECUTABLE})
  set_tests_properties(checkpoints_${script} PROPERTIES LABELS checkpoints TIMEOUT 180)
endforeach()
