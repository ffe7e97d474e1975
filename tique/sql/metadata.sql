-- tique's shared metadata. Append-only and WITHOUT constraints (not even NOT NULL): MonetDB aborts concurrent
-- appends to constrained tables, and never conflicts on plain appends.
-- The commit record and write-set of every transaction that reached COMMIT: one row per written key hash.
CREATE TABLE tique.commits (txid BIGINT, sts BIGINT, cts BIGINT, h BIGINT);
-- The outcome of every transaction that wrote a commit record.
CREATE TABLE tique.outcomes (txid BIGINT, cts BIGINT, ok BOOLEAN);  -- ok: committed (TRUE) or aborted
-- Keys a priority transaction reserved for its retry: others touching them lose certification meanwhile.
CREATE TABLE tique.reservations (txid BIGINT, h BIGINT, until_ms BIGINT);
-- The catalog of tables tique manages (DDL only). table_id: the creating DDL's transaction id (databases made
-- before ids came from that counter have INT here, which holds them: ids start at 1 per database).
CREATE TABLE tique.tables (table_id BIGINT, schema_name VARCHAR(128), name VARCHAR(128), kind VARCHAR(16), spec CLOB);
-- One row per checkpointer run (written only by the checkpointer, the last 1000 kept): what it did, and the
-- counters' high-water marks, which recovery restarts past once the commits they came from are trimmed.
CREATE TABLE tique.checkpoints (started_ms BIGINT, duration_ms BIGINT, horizon BIGINT, low_txid BIGINT, last_txid BIGINT, last_cts BIGINT, moved BIGINT, cleaned BIGINT, trimmed BIGINT, conflicts INT, errors INT, note CLOB);
