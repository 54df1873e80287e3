# tokenizer/sources.cmake — the byte tokenizer and the handle over it, BPE (byte-level and SentencePiece-style: the loader, its
# lookup tables, the normalizer, the encoder, training), text files encoded on threads, a model's prompts and start token.
set(RINGGPT_tokenizer_SOURCES tokenizer/tokenizer.c tokenizer/normalize.c tokenizer/bpe_tables.c tokenizer/bpe.c tokenizer/bpe_encode.c
    tokenizer/bpe_train.c tokenizer/text_encode.c)
