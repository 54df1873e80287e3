# bench/tokenizer.cmake — byte-level BPE encode/decode throughput (bench/tokenizer_bench.sh compares with HF tokenizers).
add_executable(tokenizer_bench bench/tokenizer_bench.c)
target_link_libraries(tokenizer_bench PRIVATE ringgpt_lib)
