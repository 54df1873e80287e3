# bench/gpu.cmake — GPU benchmark programs (CUDA builds only); bench/gpu_side_by_side.sh (with bench/torch_ref.py and bench/gpu_attention_torch.py) drives them.
if(RINGGPT_HAVE_CUDA)
  add_executable(gpu_attention_bench ${CMAKE_SOURCE_DIR}/bench/gpu_attention_bench.c)
  target_link_libraries(gpu_attention_bench PRIVATE ringgpt_lib)
endif()
