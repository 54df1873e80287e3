# bench/gpu.cmake — GPU benchmark programs (CUDA builds only); bench/gpu_side_by_side.sh (with bench/torch_ref.py and bench/gpu_attention_torch.py) drives them.
if(RINGGPT_HAVE_CUDA)
  foreach(b gpu_attention_bench gpu_kernels_bench)
    add_executable(${b} ${CMAKE_SOURCE_DIR}/bench/${b}.c)
    target_link_libraries(${b} PRIVATE ringgpt_lib)
  endforeach()
endif()
