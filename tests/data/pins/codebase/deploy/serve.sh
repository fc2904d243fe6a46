#!/bin/sh
# Serve the toy model at the revision we evaluated.
set -eu
vllm serve hubwatch-test/toy --revision 00d63093b6cb5bb5760aaaa49a8eba8a1cfcf28e --port 8000 &
text-generation-launcher \
    --model-id hubwatch-test/toy \
    --revision=00d6309 \
    --port 8080
huggingface-cli download hubwatch-test/toy --revision main --local-dir /models/toy
hf download "$MODEL" --revision "$REVISION"
# vllm serve hubwatch-test/toy --revision 02aa12c8f799ab86226c8f1436611b29118bec20
hf download hubwatch-test/toy
