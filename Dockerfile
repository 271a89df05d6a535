# The Specialist Orchestrator image: the worker, the web console and the one-shot setup job
# (`specialists setup`) are the same image with different commands (infra/compose.yaml, infra/k8s/).
# Non-root; git (worktree execution) and bubblewrap (confined agent and verify commands) installed;
# the project installed from its wheel, its dependencies from requirements.lock with their hashes.
# The embedded Temporal dev server is not in it: a deployment points at a cluster.

FROM python:3.11-slim-bookworm AS wheel
WORKDIR /src
COPY pyproject.toml README.md ./
COPY activities activities
COPY catalog catalog
COPY contracts contracts
COPY control control
COPY examples examples
COPY infra infra
COPY runtime runtime
COPY store store
COPY worker worker
COPY workflows workflows
RUN pip wheel --no-cache-dir --no-deps . -w /dist

FROM python:3.11-slim-bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 --user-group specialists \
    && install -d -o specialists -g specialists -m 0700 /var/lib/specialists
COPY requirements.lock /tmp/requirements.lock
RUN pip install --no-cache-dir --require-hashes -r /tmp/requirements.lock && rm /tmp/requirements.lock
COPY --from=wheel /dist/*.whl /tmp/
RUN pip install --no-cache-dir --no-deps /tmp/*.whl && rm /tmp/*.whl
USER specialists
WORKDIR /home/specialists
ENV SPECIALISTS_STATE_DIR=/var/lib/specialists \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
VOLUME ["/var/lib/specialists"]
ENTRYPOINT ["specialists"]
CMD ["worker"]
