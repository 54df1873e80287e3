# checkpoints/sources.cmake — safetensors, checkpoint directories, the training hooks, HF Llama, inference, commands, model tokenizers.
list(APPEND RINGGPT_SOURCES checkpoints/fsio.c checkpoints/safetensors.c checkpoints/checkpoint.c
     checkpoints/train_ckpt.c checkpoints/hf.c checkpoints/infer.c checkpoints/commands.c
     checkpoints/model_tokenizer.c)
