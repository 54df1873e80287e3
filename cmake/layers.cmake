# cmake/layers.cmake — one static library per folder, each compiled against an include tree that holds only the folders it may use.
#
# The layering (docs/DESIGN.md): core <- {data, attention} <- model <- checkpoints <- {train, eval} <- cli. A folder's
# library is compiled with -I build/layers/<folder>/, a directory of links to the folder itself and to the
# folders below it, and never with the source root: an upward `#include "train/train.h"` in data/ finds no file
# and the build stops there. Every header is also compiled alone in its folder's tree (rg_<folder>_headers), so
# a header that no source of its own folder includes cannot hide an upward include either.
set(RINGGPT_LAYERS core data attention model checkpoints train eval cli)
set(RINGGPT_USES_core "")
set(RINGGPT_USES_data core)
set(RINGGPT_USES_attention core)
set(RINGGPT_USES_model core data attention)
set(RINGGPT_USES_checkpoints core data attention model)
set(RINGGPT_USES_train core data attention model checkpoints)
set(RINGGPT_USES_eval core data attention model checkpoints)
set(RINGGPT_USES_cli core data attention model checkpoints train eval)

foreach(folder ${RINGGPT_LAYERS})
  include(${CMAKE_SOURCE_DIR}/${folder}/sources.cmake)
  set(tree ${CMAKE_BINARY_DIR}/layers/${folder})
  file(REMOVE_RECURSE ${tree})
  file(MAKE_DIRECTORY ${tree})
  foreach(dep ${folder} ${RINGGPT_USES_${folder}})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${dep} ${tree}/${dep} SYMBOLIC)
  endforeach()
endforeach()

# Every header of folder compiled alone against the folder's tree.
function(ringgpt_header_checks folder lib)
  file(GLOB headers RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${folder}/*.h)
  if(NOT RINGGPT_HAVE_CUDA)
    list(REMOVE_ITEM headers core/cuda_check.h)   # it includes the toolkit's cuda_runtime.h
  endif()
  set(checks)
  foreach(h ${headers})
    string(REPLACE "/" "_" name ${h})
    set(c ${CMAKE_BINARY_DIR}/header_checks/${name}.c)
    file(WRITE ${c}.new "#include \"${h}\"   // compiles alone in ${folder}'s include tree (cmake/layers.cmake)\n")
    file(COPY_FILE ${c}.new ${c} ONLY_IF_DIFFERENT)
    list(APPEND checks ${c})
  endforeach()
  add_library(${lib}_headers OBJECT ${checks})
  target_include_directories(${lib}_headers PRIVATE ${CMAKE_BINARY_DIR}/layers/${folder})
  target_link_libraries(${lib}_headers PRIVATE ${lib})
endfunction()

# ringgpt_layers(AGGREGATE SUFFIX WITH_CUDA): the libraries rg_<folder><SUFFIX> (SUFFIX 64: the double-precision
# twin, -DRINGGPT_F64) and an interface target AGGREGATE for tests and benchmarks (everything, source-root includes).
function(ringgpt_layers aggregate suffix with_cuda)
  foreach(folder ${RINGGPT_LAYERS})
    set(lib rg_${folder}${suffix})
    set(srcs ${RINGGPT_${folder}_SOURCES})
    if(with_cuda AND RINGGPT_HAVE_CUDA)
      list(APPEND srcs ${RINGGPT_${folder}_CUDA_SOURCES})
    endif()
    list(TRANSFORM srcs PREPEND ${CMAKE_SOURCE_DIR}/)
    add_library(${lib} STATIC ${srcs})
    target_include_directories(${lib} PRIVATE ${CMAKE_BINARY_DIR}/layers/${folder})
    foreach(dep ${RINGGPT_USES_${folder}})
      target_link_libraries(${lib} PUBLIC rg_${dep}${suffix})
    endforeach()
    if(suffix STREQUAL "64")
      target_compile_definitions(${lib} PUBLIC RINGGPT_F64)
    else()
      ringgpt_header_checks(${folder} ${lib})
    endif()
  endforeach()
  target_include_directories(rg_core${suffix} PUBLIC ${CBLAS_INCLUDE_DIR} ${CJSON_INCLUDE_DIR} ${PCRE2_INCLUDE_DIR} ${ZSTD_INCLUDE_DIR})
  target_link_libraries(rg_core${suffix} PUBLIC OpenMP::OpenMP_C MPI::MPI_C ZLIB::ZLIB Threads::Threads ${BLAS_LIBRARIES}
                        ${CJSON_LIBRARY} ${PCRE2_LIBRARY} ${ZSTD_LIBRARY} ${MATH_LIBRARY})
  if(with_cuda AND RINGGPT_HAVE_CUDA)
    ringgpt_cuda_layers("${suffix}")
  endif()
  add_library(${aggregate} INTERFACE)
  target_link_libraries(${aggregate} INTERFACE rg_cli${suffix})
  target_include_directories(${aggregate} INTERFACE ${CMAKE_SOURCE_DIR})
endfunction()
