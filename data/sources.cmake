# data/sources.cmake — tokenizer and the plain-text source (shards, prepare and the loader join here).
list(APPEND RINGGPT_SOURCES data/tokenizer.c data/batch.c data/textdata.c)
