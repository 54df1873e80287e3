# core/cuda.cmake — the CUDA backend library (kernels, cuBLASLt, NCCL) and its link into ringgpt; included by CMakeLists.txt.
enable_language(CUDA)
# sm_90 machine code plus compute_90 PTX (newer GPUs JIT the PTX); add 80 with -DRINGGPT_CUDA_ARCHS="80;90-real;90-virtual".
if(NOT DEFINED RINGGPT_CUDA_ARCHS)
  set(RINGGPT_CUDA_ARCHS "90-real;90-virtual")
endif()
set(CMAKE_CUDA_ARCHITECTURES ${RINGGPT_CUDA_ARCHS})
set(CMAKE_CUDA_FLAGS_RELEASE "-O3 -DNDEBUG")
find_package(CUDAToolkit REQUIRED)

# NCCL: header next to the toolkit's, library in its lib64 (or the system's); optional.
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include)
find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{NCCL_HOME}/lib)
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(RINGGPT_HAVE_NCCL ON)
  message(STATUS "ringgpt: NCCL: ${NCCL_LIBRARY}")
else()
  set(RINGGPT_HAVE_NCCL OFF)
  message(WARNING "ringgpt: NCCL not found (set NCCL_HOME): the CUDA build exchanges ring blocks through MPI with host staging")
endif()

add_library(ringgpt_cuda STATIC model/ops_cuda.cu attention/attention_cuda.cu core/comm_nccl.c model/cublaslt_lazy.c)
# The Hopper attention kernels (wgmma, TMA, setmaxnreg) exist only as sm_90a machine code, whatever
# RINGGPT_CUDA_ARCHS says: an object library of their own, linked into ringgpt_cuda. attention_cuda.cu
# calls them only on a compute capability 9.0 device with RINGGPT_ATTN=sm90.
add_library(ringgpt_attn_sm90 OBJECT attention/attention_sm90.cu)
set_property(TARGET ringgpt_attn_sm90 PROPERTY CUDA_ARCHITECTURES OFF)
target_include_directories(ringgpt_attn_sm90 PRIVATE ${CMAKE_SOURCE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
target_compile_options(ringgpt_attn_sm90 PRIVATE -gencode=arch=compute_90a,code=sm_90a -std=c++20 -lineinfo
                       --expt-relaxed-constexpr -Xcudafe --diag_suppress=177)
target_sources(ringgpt_cuda PRIVATE $<TARGET_OBJECTS:ringgpt_attn_sm90>)
target_include_directories(ringgpt_cuda PUBLIC ${CMAKE_SOURCE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
# -lineinfo: source lines in profiles and sanitizer reports at no speed cost.
target_compile_options(ringgpt_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 -lineinfo --expt-relaxed-constexpr -Xcudafe --diag_suppress=177>)
# cuBLASLt is not linked: model/cublaslt_lazy.c loads it on first use (it costs ~210 MB RSS per process).
target_link_libraries(ringgpt_cuda PUBLIC CUDA::cudart ${CMAKE_DL_LIBS} MPI::MPI_C ${MATH_LIBRARY})
if(RINGGPT_HAVE_NCCL)
  target_compile_definitions(ringgpt_cuda PRIVATE RINGGPT_HAVE_NCCL)
  target_include_directories(ringgpt_cuda PRIVATE ${NCCL_INCLUDE_DIR})
  target_link_libraries(ringgpt_cuda PUBLIC ${NCCL_LIBRARY})
endif()
# The core (train/train.c: --device) calls into the CUDA library and the CUDA library into the core
# (fail, xmalloc, comm): a cycle of static libraries, which CMake repeats on the link line.
target_link_libraries(ringgpt_cuda PUBLIC ringgpt_core)
target_compile_definitions(ringgpt_core PUBLIC RINGGPT_HAVE_CUDA)
target_link_libraries(ringgpt_core PUBLIC ringgpt_cuda)
target_link_libraries(ringgpt PRIVATE ringgpt_cuda)
# Targets defined before enable_language(CUDA) did not see CMAKE_CUDA_ARCHITECTURES (CMP0104).
set_property(TARGET ringgpt ringgpt_core PROPERTY CUDA_ARCHITECTURES ${RINGGPT_CUDA_ARCHS})
