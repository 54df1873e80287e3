# data/sources.cmake — batches and their placement over the ring, the text source, shards (format, writer, reader), datasets and their tokenizer, the loader, synthetic
# tasks and their mix, the prepare pipeline.
set(RINGGPT_data_SOURCES data/dataset_tokenizer.c data/batch.c data/placement.c
    data/source.c data/textdata.c data/shard.c data/shard_writer.c data/dataset.c data/dataset_writer.c data/loader.c
    data/synthetic.c data/haystack.c data/prepare_mix.c data/prepare.c data/prepare_inputs.c data/prepare_docs.c data/prepare_synth.c
    data/prepare_stream.c data/prepare_text.c data/prepare_shuffle.c)
