# syntax=docker/dockerfile:1
# vitrine: a multi-stage image. The build stage installs the toolchain and
# DuckDB (scripts/fetch-duckdb.sh, integrity-checked from the npm registry)
# and builds; the runtime stage has the binary, libduckdb and the shared
# libraries only, runs as an unprivileged user, and works with a read-only
# root file system (writable: /var/lib/vitrine for storage and saved queries,
# /tmp for the index files, pre-rendered pages, exports, downloads and spill
# files; mount both as volumes on disk: on a tmpfs, /tmp's files would be
# memory the kernel cannot drop).
#
#   docker build -t vitrine .
#   docker run --read-only -v /tmp -v vitrine-data:/var/lib/vitrine \
#       -v $PWD/datasets.toml:/etc/vitrine/datasets.toml:ro -p 8080:8080 vitrine

ARG DEBIAN=debian:12-slim

FROM ${DEBIAN} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config git ca-certificates curl nodejs npm python3 \
      libroaring-dev libjansson-dev libcurl4-openssl-dev libbrotli-dev libzstd-dev \
      zlib1g-dev libexpat1-dev libssl-dev libdouble-conversion-dev libxxhash-dev \
      libsystemd-dev mkdocs \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN ./scripts/fetch-duckdb.sh \
 && (cd ui/explorer && npm ci --ignore-scripts --no-audit --no-fund) \
 && (cd ui/swagger && npm ci --ignore-scripts --no-audit --no-fund) \
 && make -j"$(nproc)" build/vitrine \
 && install -D -m 0755 build/vitrine /out/usr/local/bin/vitrine \
 && install -D -m 0644 third_party/duckdb/libduckdb.so /out/usr/local/lib/libduckdb.so

FROM ${DEBIAN} AS runtime
ARG VERSION=0.7.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="vitrine" \
      org.opencontainers.image.description="Parquet files and Delta tables as a typed, versioned HTTP API" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/debian:12-slim"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libroaring0 libjansson4 libcurl4 libbrotli1 libzstd1 zlib1g \
      libexpat1 libssl3 libdouble-conversion3 libxxhash0 libsystemd0 libstdc++6 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 vitrine \
 && useradd --system --uid 10001 --gid vitrine --home-dir /var/lib/vitrine \
      --shell /usr/sbin/nologin vitrine \
 && install -d -o vitrine -g vitrine -m 0750 /var/lib/vitrine /etc/vitrine
COPY --from=build /out/ /
# The binary finds libduckdb through its rpath ($ORIGIN/../third_party/duckdb)
# in a checkout; here it is in /usr/local/lib.
RUN ldconfig
ENV TMPDIR=/tmp \
    VITRINE_LOG_FORMAT=json
USER 10001:10001
WORKDIR /var/lib/vitrine
VOLUME ["/var/lib/vitrine"]
EXPOSE 8080 5432
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/vitrine"]
CMD ["--config", "/etc/vitrine/datasets.toml"]
