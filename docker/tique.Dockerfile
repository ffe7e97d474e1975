# tique itself (driver, checkpointer, benchmarks) on Python 3.10, for the compose services.
FROM python:3.10-slim
RUN apt-get update && apt-get install -y --no-install-recommends gcc make && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/tique
COPY . .
RUN pip install --no-cache-dir -e . && make build
ENTRYPOINT ["tique"]
