-- Binds the C module's functions (udf/tique_udf.c, MAL module "tique") to SQL in schema tique.
-- Every function is a scalar "unsafe" command: the optimizer never merges or reorders the calls.
CREATE OR REPLACE FUNCTION tique.next_txid() RETURNS BIGINT EXTERNAL NAME tique.next_txid;
CREATE OR REPLACE FUNCTION tique.next_cts() RETURNS BIGINT EXTERNAL NAME tique.next_cts;
CREATE OR REPLACE FUNCTION tique.sts() RETURNS BIGINT EXTERNAL NAME tique.sts;
CREATE OR REPLACE FUNCTION tique.published() RETURNS BIGINT EXTERNAL NAME tique.published;
CREATE OR REPLACE FUNCTION tique.publish(c BIGINT, timeout_ms INT) RETURNS BIGINT EXTERNAL NAME tique.publish;
CREATE OR REPLACE FUNCTION tique.decide(c BIGINT) RETURNS BIGINT EXTERNAL NAME tique.decide;
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
CREATE OR REPLACE FUNCTION tique.begin_txn(prev BIGINT, lease_ms INT) RETURNS BIGINT EXTERNAL NAME tique.begin_txn;
CREATE OR REPLACE FUNCTION tique.snapshot_of(txid BIGINT) RETURNS BIGINT EXTERNAL NAME tique.snapshot_of;
CREATE OR REPLACE FUNCTION tique.renew(txid BIGINT, lease_ms INT) RETURNS INT EXTERNAL NAME tique.renew;
CREATE OR REPLACE FUNCTION tique.end_txn(txid BIGINT) RETURNS INT EXTERNAL NAME tique.end_txn;
CREATE OR REPLACE FUNCTION tique.horizon() RETURNS BIGINT EXTERNAL NAME tique.horizon;
CREATE OR REPLACE FUNCTION tique.oldest_txid() RETURNS BIGINT EXTERNAL NAME tique.oldest_txid;
CREATE OR REPLACE FUNCTION tique.pins() RETURNS INT EXTERNAL NAME tique.pins;
CREATE OR REPLACE FUNCTION tique.next_cts_for(txid BIGINT) RETURNS BIGINT EXTERNAL NAME tique.next_cts_for;
CREATE OR REPLACE FUNCTION tique.ckpt_acquire(owner BIGINT, lease_ms INT) RETURNS BIGINT EXTERNAL NAME tique.ckpt_acquire;
CREATE OR REPLACE FUNCTION tique.ckpt_release(owner BIGINT) RETURNS INT EXTERNAL NAME tique.ckpt_release;
