"""Differs of GGUF models (llama.cpp's files), each model paired by name across two revisions."""
