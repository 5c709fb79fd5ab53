# The app image (deploy/compose.yaml): one `chatbot serve` replica per container; the same image runs the
# migrations + ingest job and `chroma run` (so the index server's version is the client's, chromadb 1.5.9).
# Every model the served pipeline reads ships inside Python packages (MiniLM, e5) or models/ (the reranker,
# the red-flag classifier): nothing is downloaded at run time. The LLM server is its own image.
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False GRADIO_ANALYTICS_ENABLED=False

WORKDIR /app
# dependencies first (a code change does not reinstall them); editable, so settings find corpus/ and models/
COPY pyproject.toml README.md ./
COPY chatbot chatbot
COPY corpus corpus
COPY evaluation evaluation
COPY ui ui
COPY prompts prompts
COPY models models
RUN pip install torch==2.13.0 && pip install -e . \
    && useradd --system --uid 10001 --home-dir /data chatbot && mkdir -p /data && chown chatbot /data

USER chatbot
ENV CHATBOT_PATHS__DATA_DIR=/data CHATBOT_SERVER__HOST=0.0.0.0 CHATBOT_SERVER__PORT=7860 \
    FORWARDED_ALLOW_IPS=*
EXPOSE 7860
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/api/v1/ready', timeout=4)"
CMD ["chatbot", "serve"]
