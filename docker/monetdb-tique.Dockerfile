# The official MonetDB server with tique's C module built against that server's own headers.
# mserver5 loads it with --loadmodule=tique (it looks for lib_tique.so in its module directory).
ARG MONETDB_IMAGE=monetdb/monetdb:latest
FROM ${MONETDB_IMAGE}
USER root
COPY tique/udf/tique_udf.c /tmp/tique_udf.c
RUN set -eux; \
    if command -v dnf >/dev/null; then dnf install -y gcc pkgconf-pkg-config MonetDB-devel || dnf install -y gcc pkgconf-pkg-config monetdb-devel; \
    else apt-get update && apt-get install -y --no-install-recommends gcc pkg-config monetdb5-server-dev; fi; \
    moddir="$(pkg-config --variable=libdir monetdb5)/monetdb5"; \
    cc -O2 -fPIC -shared -pthread -DTIQUE_MONETDB_HEADERS $(pkg-config --cflags monetdb5) \
       -o "$moddir/lib_tique.so" /tmp/tique_udf.c
ENV MDB_EXTRA_MSERVER5_ARGS="--loadmodule=tique"
