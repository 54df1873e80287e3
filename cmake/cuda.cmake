# cmake/cuda.cmake — the CUDA toolkit and NCCL, and the CUDA parts of the core, attention and model layers.
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
# The dialect is CMake's default for nvcc (C++17, passed as -std=c++17; CMake 3.25 knows no CUDA20 for nvcc 13).
set(RINGGPT_CUDA_OPTIONS -lineinfo --expt-relaxed-constexpr -Xcudafe --diag_suppress=177)

# cuDNN (--attn cudnn): cudnn.h next to the toolkit's headers and the cuDNN frontend's headers (header-only C++,
# PyPI's nvidia-cudnn-frontend, which scripts/deps.sh installs). Nothing is linked: attention/cudnn_sdpa.cpp
# opens libcudnn.so.9 at run time (the loader's path, then RINGGPT_CUDNN_LIBDIR, the directory found here). A
# build without them has no cuDNN path and --attn cudnn is a usage error.
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDNN_HOME}/include)
find_library(CUDNN_LIBRARY NAMES libcudnn.so.9 cudnn HINTS ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR}
             $ENV{CUDNN_HOME}/lib)
find_package(Python3 COMPONENTS Interpreter QUIET)
# The frontend wheel's include/ sits next to its `cudnn` package in site-packages; PyPI's CUDA tool wheels
# (nvidia-cuda-cuobjdump: the SASS checks' cuobjdump) put their programs in site-packages/nvidia/cu<N>/bin. Asked
# of the Python CMake finds and of the system's (scripts/deps.sh installs with the one that has numpy).
set(RINGGPT_PIP_CUDNN_FE "")
set(RINGGPT_PIP_NVIDIA_BIN "")
foreach(py ${Python3_EXECUTABLE} /usr/bin/python3)
  if(EXISTS ${py})
    execute_process(COMMAND ${py} -c
      "import importlib.util, os; s = importlib.util.find_spec('cudnn'); print(os.path.join(os.path.dirname(os.path.dirname(s.origin)), 'include') if s and s.origin else '')"
      OUTPUT_VARIABLE fe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${py} -c
      "import sysconfig, glob; print(';'.join(glob.glob(sysconfig.get_paths()['purelib'] + '/nvidia/cu*/bin')))"
      OUTPUT_VARIABLE bin OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND RINGGPT_PIP_CUDNN_FE ${fe})
    list(APPEND RINGGPT_PIP_NVIDIA_BIN ${bin})
  endif()
endforeach()
find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h HINTS ${RINGGPT_PIP_CUDNN_FE} $ENV{CUDNN_FRONTEND_HOME}/include)
set(RINGGPT_CUDNN AUTO CACHE STRING "Build the cuDNN attention path (--attn cudnn): AUTO (when found) or OFF")
if(NOT RINGGPT_CUDNN STREQUAL "OFF" AND CUDNN_INCLUDE_DIR AND EXISTS "${CUDNN_INCLUDE_DIR}/cudnn.h" AND
   CUDNN_FRONTEND_INCLUDE_DIR AND EXISTS "${CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
  set(RINGGPT_HAVE_CUDNN ON)
  set(RINGGPT_CUDNN_LIBDIR "")
  if(CUDNN_LIBRARY)
    get_filename_component(RINGGPT_CUDNN_LIBDIR ${CUDNN_LIBRARY} DIRECTORY)
  endif()
  message(STATUS "ringgpt: cuDNN: ${CUDNN_INCLUDE_DIR}/cudnn.h, frontend ${CUDNN_FRONTEND_INCLUDE_DIR}, library dir '${RINGGPT_CUDNN_LIBDIR}'")
  enable_language(CXX)
else()
  set(RINGGPT_HAVE_CUDNN OFF)
  message(WARNING "ringgpt: cuDNN or its frontend headers not found or -DRINGGPT_CUDNN=OFF (cudnn.h: ${CUDNN_INCLUDE_DIR}, "
                  "cudnn_frontend.h: ${CUDNN_FRONTEND_INCLUDE_DIR}; pip install nvidia-cudnn-frontend): built without --attn cudnn")
endif()

# The Hopper attention kernels: only with -DRINGGPT_SM90_KERNELS=ON (CMakeLists.txt), an experiment kept out of the
# default build; RINGGPT_HAVE_SM90 tells the tests, and the compile definition tells the code, that --attn sm90 exists.
set(RINGGPT_HAVE_SM90 ${RINGGPT_SM90_KERNELS})
message(STATUS "ringgpt: Hopper attention kernels (--attn sm90, -DRINGGPT_SM90_KERNELS): ${RINGGPT_HAVE_SM90}")

# Called by ringgpt_layers for the float build: core gets the device, its memory and the NCCL comms (and
# defines RINGGPT_HAVE_CUDA for every layer above); attention and model their kernels. cuBLASLt is not
# linked: model/cublaslt_lazy.c loads it on first use (it costs ~210 MB RSS per process).
function(ringgpt_cuda_layers suffix)
  target_compile_definitions(rg_core${suffix} PUBLIC RINGGPT_HAVE_CUDA)
  target_include_directories(rg_core${suffix} PUBLIC ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(rg_core${suffix} PUBLIC CUDA::cudart ${CMAKE_DL_LIBS})
  if(RINGGPT_HAVE_NCCL)
    target_compile_definitions(rg_core${suffix} PRIVATE RINGGPT_HAVE_NCCL)
    target_include_directories(rg_core${suffix} PRIVATE ${NCCL_INCLUDE_DIR})
    target_link_libraries(rg_core${suffix} PUBLIC ${NCCL_LIBRARY})
  endif()
  foreach(layer attention model)
    target_compile_options(rg_${layer}${suffix} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${RINGGPT_CUDA_OPTIONS}>)
    set_property(TARGET rg_${layer}${suffix} PROPERTY CUDA_ARCHITECTURES ${RINGGPT_CUDA_ARCHS})
  endforeach()
  # The Hopper attention kernels (wgmma, TMA, setmaxnreg; -DRINGGPT_SM90_KERNELS=ON only) exist only as sm_90a
  # machine code, whatever RINGGPT_CUDA_ARCHS says: an object library of their own in attention's tree, linked
  # into its library. attention_cuda.cu calls them only on a compute capability 9.0 device with --attn sm90.
  if(RINGGPT_HAVE_SM90)
    add_library(rg_attention_sm90 OBJECT ${CMAKE_SOURCE_DIR}/attention/attention_sm90.cu)
    set_property(TARGET rg_attention_sm90 PROPERTY CUDA_ARCHITECTURES OFF)
    target_include_directories(rg_attention_sm90 PRIVATE ${CMAKE_BINARY_DIR}/layers/attention ${CUDAToolkit_INCLUDE_DIRS})
    target_compile_options(rg_attention_sm90 PRIVATE -gencode=arch=compute_90a,code=sm_90a ${RINGGPT_CUDA_OPTIONS})
    target_compile_definitions(rg_attention_sm90 PRIVATE RINGGPT_HAVE_SM90)
    target_compile_definitions(rg_attention${suffix} PUBLIC RINGGPT_HAVE_SM90)
    target_sources(rg_attention${suffix} PRIVATE $<TARGET_OBJECTS:rg_attention_sm90>)
  endif()
  # cuDNN's fused attention per block: the glue kernels (CUDA) and the frontend's one C++ translation unit.
  if(RINGGPT_HAVE_CUDNN)
    target_compile_definitions(rg_attention${suffix} PUBLIC RINGGPT_HAVE_CUDNN)
    target_sources(rg_attention${suffix} PRIVATE ${CMAKE_SOURCE_DIR}/attention/attention_cudnn.cu
                   ${CMAKE_SOURCE_DIR}/attention/cudnn_sdpa.cpp)
    set_source_files_properties(${CMAKE_SOURCE_DIR}/attention/cudnn_sdpa.cpp PROPERTIES
      COMPILE_OPTIONS "-std=c++17;-Wno-unused-parameter;-Wno-sign-compare;-Wno-missing-field-initializers;-Wno-unused-function"
      COMPILE_DEFINITIONS "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING;RINGGPT_CUDNN_LIBDIR=\"${RINGGPT_CUDNN_LIBDIR}\""
      INCLUDE_DIRECTORIES "${CUDNN_FRONTEND_INCLUDE_DIR};${CUDNN_INCLUDE_DIR}")
    target_include_directories(rg_attention${suffix} PRIVATE ${CUDNN_INCLUDE_DIR})
  endif()
endfunction()
