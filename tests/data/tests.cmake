# tests/data/tests.cmake — data/: shard format and corruption, loader layouts and resume, placements of a window, prepare (its command and its library, mix files, corpora:
# JSONL text records, gzip and zstd, --doc-per dir, --shuffle-docs, the parquet converter), synthetic tasks, loss masks,
# and libFuzzer on the shard reader and the manifest reader.
foreach(t shard loader prepare prepare_api synthetic loss_mask placement)
  add_executable(test_${t} ${CMAKE_SOURCE_DIR}/tests/data/test_${t}.c)
  target_link_libraries(test_${t} PRIVATE ringgpt_lib)
  add_test(NAME data_${t} COMMAND test_${t})
  set_tests_properties(data_${t} PROPERTIES LABELS data TIMEOUT 120)
endforeach()
foreach(script test_cli test_threads corpora parquet)
  string(REGEX REPLACE "^test_" "" name ${script})
  add_test(NAME data_${name} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/data/${script}.sh ${RINGGPT_BIN})
  set_tests_properties(data_${name} PROPERTIES LABELS data TIMEOUT 180 SKIP_RETURN_CODE 77)
endforeach()
# libFuzzer on each parser of data/ for a few seconds (label fuzz); SKIP (77) without clang's libFuzzer runtime.
# bench/fuzz.sh runs the same targets for 10 million executions each.
add_test(NAME data_fuzz_shard_reader
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/data/fuzz_shard.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 20 ${RINGGPT_BIN})
add_test(NAME data_fuzz_manifest
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/data/fuzz_manifest.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} 10 ${RINGGPT_BIN})
set_tests_properties(data_fuzz_shard_reader data_fuzz_manifest PROPERTIES LABELS "data;fuzz" TIMEOUT 180 SKIP_RETURN_CODE 77)
