# hitl-bridge: a slim Python 3.11 image running `hitl-bridge serve` as a non-root user,
# with the store on a volume. Build: docker build -t hitl-bridge .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin bridge \
 && mkdir -p /data /config && chown bridge:bridge /data

WORKDIR /app
COPY pyproject.toml README.md ./
COPY clients/python ./clients/python
COPY bridge ./bridge
COPY adapters ./adapters
# the daemon pins hitl-bridge-client; it comes from this checkout, installed beside it
RUN pip install --no-cache-dir ./clients/python .

USER bridge
WORKDIR /data
VOLUME ["/data"]
# Listening beyond loopback needs http.api_tokens (the daemon refuses to start otherwise):
# pass BRIDGE_API_TOKEN, or mount a config at /config/hitl-bridge.yaml.
ENV HITL_BRIDGE__STORE__URL=sqlite:////data/bridge.db \
    HITL_BRIDGE__HTTP__LISTEN=0.0.0.0:8787
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8787/healthz').status == 200 else 1)"
ENTRYPOINT ["hitl-bridge"]
CMD ["serve"]
