# Threadwise's image: `threadwise serve` with the default install (the embedded models ship inside their PyPI
# packages, so a container starts offline; no torch) and the PostgreSQL driver, as a non-root user, its data
# folder (SQLite, Chroma, BM25) in the volume /data. compose.yaml builds it; tests/test_compose.py checks that
# the two agree and lints this file with hadolint.
#   docker build -t threadwise:local .
#   docker run --env-file .env -p 3000:3000 -v threadwise:/data threadwise:local

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/threadwise
WORKDIR /src
# the dependencies alone first: a change to the code does not reinstall them
COPY pyproject.toml README.md ./
RUN mkdir threadwise && touch threadwise/__init__.py \
    && /opt/threadwise/bin/pip install --no-cache-dir '.[postgres]' \
    && /opt/threadwise/bin/pip uninstall --yes threadwise
COPY threadwise ./threadwise
RUN /opt/threadwise/bin/pip install --no-cache-dir --no-deps '.[postgres]'

FROM python:3.11-slim
ENV PATH=/opt/threadwise/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    THREADWISE_DATA_DIR=/data
RUN groupadd --system --gid 10001 threadwise \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin threadwise \
    && mkdir /data && chown 10001:10001 /data
COPY --from=build /opt/threadwise /opt/threadwise
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
# Slack's Events API (--http) and, when TEAMS_* are set, Teams' endpoint; /metrics on both
EXPOSE 3000 3978
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3000/healthz', timeout=4)"]
# SIGTERM: stop taking events (up to 10 s), finish the answers in progress (up to 15 s), close the scheduler,
# exit 0; give it 30 s (`docker run --stop-timeout 30`, compose: stop_grace_period), Docker waits 10 s by default
STOPSIGNAL SIGTERM
CMD ["threadwise", "serve", "--http", "3000"]
