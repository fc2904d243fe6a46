#!/bin/sh
llama-server -hf hubwatch-test/chat:Q4_K_M --port 8081
ollama pull hf.co/hubwatch-test/chat:Q4_K_M
python -m sglang.launch_server --model-path hubwatch-test/chat --revision @C1S@
