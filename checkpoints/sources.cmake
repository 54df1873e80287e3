# checkpoints/sources.cmake — checked file I/O, safetensors, checkpoint directories, the training hooks, run directories,
# HF Llama, loading for inference, model tokenizers, the summary `inspect` prints, sharded checkpoints' files and reader.
set(RINGGPT_checkpoints_SOURCES checkpoints/fsio.c checkpoints/safetensors.c checkpoints/checkpoint.c
    checkpoints/ckpt_format.c checkpoints/train_ckpt.c checkpoints/rundir.c checkpoints/hf.c checkpoints/hf_config.c
    checkpoints/load.c checkpoints/model_tokenizer.c checkpoints/summary.c checkpoints/ckpt_shard.c)
