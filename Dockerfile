# hitl-bridge: a slim Python 3.11 image running `hitl-bridge serve` as a non-root user,
# with the store on a volume. Build: docker build -t hitl-bridge .
#
# Config: the first file that exists of /config/hitl-bridge.yaml (mount yours there) and
# /etc/hitl-bridge/hitl-bridge.yaml (the image's own, config/docker.yaml: SQLite on /data,
# 0.0.0.0:8787, needs BRIDGE_API_TOKEN). Make the token first, so you have it to use:
#   export BRIDGE_API_TOKEN=$(openssl rand -hex 24); echo "$BRIDGE_API_TOKEN"
#   docker run -p 8787:8787 -v hitl-data:/data -e BRIDGE_API_TOKEN hitl-bridge
# No setting is baked in as an environment variable: HITL_BRIDGE__* variables would override
# every config, a mounted one too.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin bridge \
 && mkdir -p /data /config /etc/hitl-bridge && chown bridge:bridge /data

WORKDIR /app
COPY pyproject.toml README.md requirements.lock ./
COPY clients/python ./clients/python
COPY bridge ./bridge
COPY adapters ./adapters
# the daemon pins hitl-bridge-client; it comes from this checkout, installed beside it. The whole
# dependency tree is pinned by requirements.lock (scripts/lock), used as a constraints file.
RUN pip install --no-cache-dir -c requirements.lock ./clients/python .
COPY config/docker.yaml /etc/hitl-bridge/hitl-bridge.yaml

USER bridge
WORKDIR /data
VOLUME ["/data"]
# where to look for the config (a search path, not a setting): a mounted file wins
ENV HITL_BRIDGE_CONFIG_PATH=/config/hitl-bridge.yaml:/etc/hitl-bridge/hitl-bridge.yaml
EXPOSE 8787
# /healthz is liveness only; point a load balancer or Kubernetes readinessProbe at /readyz
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8787/healthz').status == 200 else 1)"
ENTRYPOINT ["hitl-bridge"]
CMD ["serve"]
