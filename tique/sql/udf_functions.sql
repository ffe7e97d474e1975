-- Binds the C module's functions (udf/tique_udf.c, MAL module "tique") to SQL in schema tique.
-- Every function is a scalar "unsafe" command: the optimizer never merges or reorders the calls.
CREATE OR REPLACE FUNCTION tique.next_txid() RETURNS BIGINT EXTERNAL NAME tique.next_txid;
CREATE OR REPLACE FUNCTION tique.next_cts() RETURNS BIGINT EXTERNAL NAME tique.next_cts;
CREATE OR REPLACE FUNCTION tique.sts() RETURNS BIGINT EXTERNAL NAME tique.sts;
CREATE OR REPLACE FUNCTION tique.published() RETURNS BIGINT EXTERNAL NAME tique.published;
DROP FUNCTION IF EXISTS tique.decide(BIGINT);
CREATE OR REPLACE FUNCTION tique.decide(c BIGINT, ok INT) RETURNS BIGINT EXTERNAL NAME tique.decide;
CREATE OR REPLACE FUNCTION tique.verdict(c BIGINT) RETURNS INT EXTERNAL NAME tique.verdict;
CREATE OR REPLACE FUNCTION tique.owner(c BIGINT) RETURNS BIGINT EXTERNAL NAME tique.owner;
CREATE OR REPLACE FUNCTION tique.advance(c BIGINT, timeout_ms INT) RETURNS BIGINT EXTERNAL NAME tique.advance;
CREATE OR REPLACE FUNCTION tique.abandon(c BIGINT) RETURNS BIGINT EXTERNAL NAME tique.abandon;
CREATE OR REPLACE FUNCTION tique.cts_state(c BIGINT) RETURNS INT EXTERNAL NAME tique.state;
CREATE OR REPLACE FUNCTION tique.reset(txid BIGINT, cts BIGINT) RETURNS BIGINT EXTERNAL NAME tique.reset;
CREATE OR REPLACE FUNCTION tique.set_lease(ms INT) RETURNS BIGINT EXTERNAL NAME tique.set_lease;
CREATE OR REPLACE FUNCTION tique.last_txid() RETURNS BIGINT EXTERNAL NAME tique.last_txid;
CREATE OR REPLACE FUNCTION tique.last_cts() RETURNS BIGINT EXTERNAL NAME tique.last_cts;
CREATE OR REPLACE FUNCTION tique.abandoned() RETURNS BIGINT EXTERNAL NAME tique.abandoned;
CREATE OR REPLACE FUNCTION tique.stuck() RETURNS BIGINT EXTERNAL NAME tique.stuck;
CREATE OR REPLACE FUNCTION tique.expire(c BIGINT) RETURNS BIGINT EXTERNAL NAME tique.expire;
CREATE OR REPLACE FUNCTION tique.abi() RETURNS INT EXTERNAL NAME tique.abi;
CREATE OR REPLACE FUNCTION tique.snapshot_of(txid BIGINT) RETURNS BIGINT EXTERNAL NAME tique.snapshot_of;
CREATE OR REPLACE FUNCTION tique.horizon() RETURNS BIGINT EXTERNAL NAME tique.horizon;
CREATE OR REPLACE FUNCTION tique.oldest_txid() RETURNS BIGINT EXTERNAL NAME tique.oldest_txid;
CREATE OR REPLACE FUNCTION tique.pins() RETURNS INT EXTERNAL NAME tique.pins;
CREATE OR REPLACE FUNCTION tique.ckpt_acquire(owner BIGINT, lease_ms INT) RETURNS BIGINT EXTERNAL NAME tique.ckpt_acquire;
CREATE OR REPLACE FUNCTION tique.ckpt_release(owner BIGINT) RETURNS INT EXTERNAL NAME tique.ckpt_release;
CREATE OR REPLACE FUNCTION tique.ckpt_lock(owner BIGINT, lease_ms INT) RETURNS BIGINT EXTERNAL NAME tique.ckpt_lock;
CREATE OR REPLACE FUNCTION tique.ckpt_fence(owner BIGINT, epoch BIGINT, lease_ms INT) RETURNS INT EXTERNAL NAME tique.ckpt_fence;
CREATE OR REPLACE FUNCTION tique.next_ids(table_id BIGINT, n INT, lowest BIGINT) RETURNS BIGINT EXTERNAL NAME tique.next_ids;
CREATE OR REPLACE FUNCTION tique.catalog_version(after_id BIGINT) RETURNS BIGINT EXTERNAL NAME tique.catalog_version;
CREATE OR REPLACE FUNCTION tique.bump_catalog() RETURNS BIGINT EXTERNAL NAME tique.bump_catalog;
CREATE OR REPLACE FUNCTION tique.wrote(c BIGINT, t BIGINT) RETURNS BIGINT EXTERNAL NAME tique.wrote;
CREATE OR REPLACE FUNCTION tique.last_write(txid BIGINT, t BIGINT) RETURNS BIGINT EXTERNAL NAME tique.last_write;
CREATE OR REPLACE FUNCTION tique.turn(appends INT, mask BIGINT, owner BIGINT, lease_ms INT) RETURNS BIGINT EXTERNAL NAME tique.turn;
CREATE OR REPLACE FUNCTION tique.turn_end(owner BIGINT, ticket BIGINT) RETURNS INT EXTERNAL NAME tique.turn_end;
CREATE OR REPLACE FUNCTION tique.storage_ok() RETURNS INT EXTERNAL NAME tique.storage_ok;
CREATE OR REPLACE FUNCTION tique.storage_room() RETURNS BIGINT EXTERNAL NAME tique.storage_room;
CREATE OR REPLACE FUNCTION tique.storage_failed() RETURNS INT EXTERNAL NAME tique.storage_failed;
-- Calls that act for a transaction carry the caller's user and kernel session ("who"): the C module binds a
-- transaction id to the session that began it and refuses the others (0: tique's owner, which may act for any:
-- recovery, the checkpointer). PUBLIC may call only the functions of the same names without "_as", which fill in
-- the caller's own (sequencer.SESSION_FUNCTIONS); they run with their owner's rights, so these need no grant.
CREATE OR REPLACE FUNCTION tique.begin_txn_as(prev BIGINT, lease_ms INT, who BIGINT) RETURNS BIGINT EXTERNAL NAME tique.begin_as;
CREATE OR REPLACE FUNCTION tique.renew_as(txid BIGINT, lease_ms INT, who BIGINT) RETURNS INT EXTERNAL NAME tique.renew_as;
CREATE OR REPLACE FUNCTION tique.end_txn_as(txid BIGINT, who BIGINT) RETURNS INT EXTERNAL NAME tique.end_as;
CREATE OR REPLACE FUNCTION tique.next_cts_for_as(txid BIGINT, who BIGINT) RETURNS BIGINT EXTERNAL NAME tique.next_cts_as;
CREATE OR REPLACE FUNCTION tique.publish_as(c BIGINT, timeout_ms INT, who BIGINT) RETURNS BIGINT EXTERNAL NAME tique.publish_as;
CREATE OR REPLACE FUNCTION tique.decide_as(c BIGINT, ok INT, who BIGINT) RETURNS BIGINT EXTERNAL NAME tique.decide_as;
CREATE OR REPLACE FUNCTION tique.record_cts_as(txid BIGINT, who BIGINT) RETURNS BIGINT EXTERNAL NAME tique.record_cts_as;
CREATE OR REPLACE FUNCTION tique.publish_own_as(txid BIGINT, who BIGINT) RETURNS BIGINT EXTERNAL NAME tique.publish_own_as;
CREATE OR REPLACE FUNCTION tique.await_published(c BIGINT, timeout_ms INT) RETURNS BIGINT EXTERNAL NAME tique.await_published;
