/*
 * tique's timestamp functions, running inside the MonetDB engine.
 *
 * One process-wide state (shared by every embedded or MAPI connection of the process) orders commits:
 *
 *   next_txid()            a fresh transaction id
 *   next_cts()             a fresh commit timestamp c; slot c becomes TAKEN
 *   publish(c, ms)         c has written its commit record (write-set + cts); slot c becomes PUBLISHED, then
 *                          the call waits until every smaller timestamp is published too. Certification of c
 *                          runs after this, so it sees the write-set of every earlier committer.
 *   decide(c, ok)          c is about to write its outcome ok; from here on it can no longer be abandoned, and
 *                          the verdict is kept: verdict(c) / owner(c) let anyone write the outcome of a commit
 *                          whose own outcome statement never committed (its client died), then advance it
 *   advance(c, ms)         c's outcome is written; slot c becomes DONE, the visible snapshot (sts) moves over
 *                          every contiguous DONE slot, and the call waits until sts >= c
 *   sts()                  the current snapshot timestamp: every commit <= sts is settled
 *
 * Snapshots in use (for the checkpointer: it may only fold versions no running transaction can still need):
 *
 *   begin_txn(prev, lease) end transaction prev (if any), hand out a new id and register it with the current sts,
 *                          atomically, so a checkpointer never computes a horizon past a snapshot being taken
 *   snapshot_of(txid)      the sts registered for txid
 *   renew(txid, lease)     extend txid's lease; 0 if it already ran out (the transaction must abort)
 *   end_txn(txid)          unregister
 *   horizon()              min(sts, every live registered sts): versions at or below it are stable
 *   oldest_txid()          the lowest live registered id, or the next id to be handed out
 *   next_cts_for(txid)     next_cts, refused once txid's lease ran out: its rows may already be cleaned away
 *
 * One checkpointer at a time: ckpt_acquire(owner, lease) / ckpt_release(owner), a lock with a lease.
 * ckpt_lock(owner, lease) takes it as ckpt_acquire does, answering the lock's epoch (a count of its changes of
 * hands) or minus the holder; ckpt_fence(owner, epoch, lease) renews it, or fails (TQ005) when it changed hands
 * since: the checkpointer's writes carry it, so a run that stalled past its lease writes nothing it read before.
 *
 * Sessions: a transaction id belongs to the kernel session that began it, and so does every commit timestamp
 * taken for it. The calls that act for one (MAL begin_as, renew_as, end_as, next_cts_as, record_cts_as,
 * publish_as, publish_own_as, decide_as) take one more argument, `who`: the caller's user and session, which SQL functions of the same names without
 * "_as" fill in from tique.who() (sequencer.SESSION_FUNCTIONS; PUBLIC may call only those), or 0 from tique's
 * owner (recovery, the checkpointer settle others' commits). Another session's id is refused (42501); end_txn
 * and begin_txn leave another session's pin alone instead. What the owner took unchecked (next_cts, *_as with
 * who 0: the driver does so for the owner's own transactions, sequencer.CSequencer.call) only the owner may act
 * for. A session id is reused after its client leaves: a new session of the same
 * user with the same id could act for the dead one's transaction until its leases run out.
 *
 * Generated keys (AUTO_INCREMENT / SERIAL / IDENTITY columns), one counter per table id, never a SQL SEQUENCE:
 *
 *   next_ids(table, n, floor)  reserve n consecutive values and return the last one. A counter unknown since
 *                              the engine started returns 0 when floor < 0: the caller then passes the column's
 *                              largest stored value (every version, committed or not) as floor. The counter
 *                              never goes below floor. n = 0 only raises a known counter to floor (an explicit
 *                              value was inserted) and returns it; an unknown one stays unknown (0).
 *
 * The catalog version, so every process notices DDL done by another one without an extra round trip:
 *
 *   catalog_version(after) the current version; the argument is ignored, it only orders the call after the one
 *                          computing it (begin_txn: the version is read after the snapshot is taken)
 *   bump_catalog()         a DDL changed tique.tables: a new version
 *
 * It starts at the wall-clock time in ms when the module loads, so it never repeats across restarts.
 *
 * Write marks, so a client may keep rows of tables nobody writes across its transactions (tique/shared_rows.py):
 *
 *   wrote(c, table)        c, after noting that commit timestamp c writes table (its mark: the largest such c);
 *                          called inside the record statement, so before c can be published
 *   last_write(after, table) the table's mark: every commit that wrote the table and is visible to a snapshot
 *                          taken before this call has a timestamp <= it (`after` orders it after begin_txn).
 *                          A table never marked since the engine started answers the floor: the last
 *                          timestamp at reset (recovery), so nothing from before a restart looks unwritten.
 *                          Marks are only ever raised; a full table of marks raises the floor instead.
 *
 * Free space, so a full disk never breaks the engine's write-ahead log (MonetDB 11.41 then acknowledges commits
 * it loses, or cannot open the database again):
 *
 *   tique_watch_storage(dir, min_free)  C only, called by the process that opened the kernel: watch dir's file
 *                          system; min_free bytes must stay free (0: no watch)
 *   storage_ok()           1, or the error below when the free space is under the minimum (for remote clients)
 *   storage_room()         the free bytes over that minimum (negative: under it; the largest BIGINT when no
 *                          directory is watched): a remote client's judge of an ambiguous refusal near a full disk
 *   storage_failed()       a client saw the engine fail a write for want of space: its log may have lost that
 *                          write, so commits are refused until the kernel is opened again (recovery replays the
 *                          log); tique_watch_storage at the next open clears it
 *   next_cts_for(txid)     refuses a commit with SQLSTATE 53100 while the free space is under the minimum
 *
 * A client that dies between next_cts and decide would leave a hole that blocks every later commit. A waiter
 * therefore abandons a predecessor that has stayed TAKEN or PUBLISHED for longer than the lease (1 s by
 * default; never while its owner waits inside publish, and counted from when that wait ended): the slot
 * becomes ABANDONED under the mutex, and the late owner's own publish/decide then fails, so it aborts.
 * A slot in DECIDING is never abandoned: its outcome may already be written. A waiter behind one that stayed
 * DECIDING for the lease returns at once (TQ004, "state deciding"); the driver writes the outcome its owner
 * decided (verdict) if none is recorded, advances it, and waits again.
 *
 * Turns, so a read of a table's strings never runs beside an append to that table (MonetDB 11.41 may move a
 * string heap while another statement reads it: the read returns '' or another row's string; tique/turns.py):
 *
 *   turn(appends, mask, owner, lease_ms)  wait, then run: a read (appends 0) waits for the appends that came
 *                          before it and share a bit of its tables' mask, an append for such reads; reads do
 *                          not wait for reads, nor appends for appends. First come, first served, so a request
 *                          waits only for earlier ones (no cycle). A MAPI client's statements run one at a
 *                          time, so its earlier requests are over (a give lost with its statement's error); a
 *                          request lapses lease_ms (1 to TURN_LEASE_MAX_MS) after its statement began if its
 *                          client never gives it back, so no session keeps the others waiting longer.
 *                          Returns the request's ticket.
 *   tique_turn_local(...)  C only, for the process that opened the kernel: the owner is a thread, its requests
 *                          never lapse, and one it makes while it holds another (nested) waits only for other
 *                          owners' running ones.
 *   turn_end(owner, ticket) the request ends (ticket 0: every request of owner)
 *
 * The process that loaded the module (an embedded kernel's) begins and finishes tique's owner's transactions
 * without a statement:
 *
 *   tique_begin_local(...)  C only: begin_txn(prev, lease) as the owner, then snapshot_of, stuck, catalog_version
 *                          and last_write of each table given, as the begin statement runs them
 *   tique_finish_local(...) C only: advance(c, timeout_ms), then end_txn(txid), as the finish statement
 *   tique_catalog_version_local() C only: catalog_version, without a statement
 *
 * Functions return NULL on success and a MonetDB exception string otherwise; "40001!" marks errors after
 * which a retry is safe, "HYT00!" timeouts, and tique's own codes (tique/errors.py, README "Errors") its own
 * conditions: "TQ003!" a lease that ran out (retry is safe), "TQ004!" a wait for a commit stuck deciding.
 *
 * Built without MonetDB headers (the embedded wheel ships none): the few structures are declared below with
 * the layout of the 11.41 (Jul2021) kernel. With -DTIQUE_MONETDB_HEADERS the real headers are used instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#define TIQUE_UDF_ABI 16

#ifdef TIQUE_MONETDB_HEADERS
#include "monetdb_config.h"
#include "mal.h"
#include "mal_exception.h"
#include "mel.h"
typedef lng tq_lng;
#define TQ_MAL MAL
#else
typedef int64_t tq_lng;
typedef char *(*MALfcn)();

typedef struct mel_arg {
	char type[15];
	unsigned char isbat : 1, vargs : 1, nr : 4;
} mel_arg;

typedef struct mel_func {
	char mod[14];
	char fcn[30];
	const char *cname;
	uint16_t command : 1, unsafe : 1, retc : 6, argc : 6, vargs : 1, vrets : 1;
	MALfcn imp;
	mel_arg *args;
} mel_func;

_Static_assert(sizeof(mel_arg) == 16, "mel_arg must be 16 bytes (MonetDB 11.41)");
_Static_assert(sizeof(mel_func) == 80, "mel_func must be 80 bytes (MonetDB 11.41)");
_Static_assert(__builtin_offsetof(mel_func, imp) == 64, "mel_func.imp at offset 64");
_Static_assert(__builtin_offsetof(mel_func, args) == 72, "mel_func.args at offset 72");

#define TQ_MAL 0 /* enum malexception: MAL */
extern char *createException(int type, const char *fcn, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
extern int mal_module(const char *name, void *atoms, mel_func *funcs);
extern void freeException(char *msg);
#endif

#define LNG_NIL INT64_MIN
#define INT_NIL INT32_MIN

/* Commits in flight at once (between next_cts and the moment sts passes them) must fit the ring. */
#define RING 65536

enum slot_state { FREE = 0, TAKEN, PUBLISHED, DECIDING, DONE, ABANDONED };

static const char *const state_names[] = {"free", "taken", "published", "deciding", "done", "abandoned"};

typedef struct {
	tq_lng cts;
	tq_lng txid;      /* the owner (next_cts_for), 0 if unknown */
	tq_lng session;   /* who took it (see who_arg; 0: taken unchecked, by tique's owner) */
	int state;
	int verdict;      /* from decide: 1 committed, 0 aborted; -1 before */
	int waiting;      /* the owner is waiting inside publish: alive, never abandoned meanwhile */
	int early;        /* record_cts: every smaller timestamp was published while the record was being written */
	int64_t since_ms; /* when the slot entered its state (or its owner last left a wait), for the lease */
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed;
static slot_t ring[RING];
static tq_lng last_txid = 0;   /* last id handed out */
static tq_lng last_cts = 0;    /* last commit timestamp handed out */
static tq_lng published = 0;   /* every cts <= published is published, settled or abandoned */
static tq_lng sts = 0;         /* every cts <= sts is settled or abandoned: the visible snapshot */
static int64_t lease_ms = 1000; /* of a commit slot; snapshot pins carry their own */
static tq_lng abandoned_total = 0;
/* Set at load when TIQUE_HOLD_UNTIL_RECOVERED is in the environment (tique serve): until recovery's reset, a
 * client that logged in early would get ids from 1 and snapshot 0, so ids, timestamps and snapshots are refused. */
static bool recovering = false;
static tq_lng catalog_version = 0;

/* write marks (see the header): open addressing by table id; a table id is never 0 */
#define MARKS 4096
typedef struct {
	tq_lng table;
	tq_lng mark;
} mark_t;
static mark_t marks[MARKS];
static int marks_used = 0;
static tq_lng marks_floor = 0;

static char *
still_recovering(const char *fcn)
{
	return createException(TQ_MAL, fcn, "40001!tique: the database is still running recovery; retry");
} /* set from the wall clock at load: never repeats across restarts */

static char storage_dir[4096]; /* the database directory, set once by tique_watch_storage */
static tq_lng storage_min_free = 0;
static bool storage_broken = false; /* the engine failed a write: refuse commits until the next open */

void
tique_watch_storage(const char *dir, int64_t min_free)
{
	pthread_mutex_lock(&lock);
	snprintf(storage_dir, sizeof(storage_dir), "%s", dir);
	storage_min_free = min_free;
	storage_broken = false;
	pthread_mutex_unlock(&lock);
}

/* NULL while the database's file system has the minimum free, else a StorageFull error (SQLSTATE 53100).
 * One statvfs call (about a microsecond): cheap enough for every commit. */
static char *
storage_refusal(const char *fcn)
{
	char dir[sizeof(storage_dir)];
	pthread_mutex_lock(&lock);
	tq_lng min_free = storage_min_free;
	memcpy(dir, storage_dir, sizeof(dir));
	bool broken = storage_broken;
	pthread_mutex_unlock(&lock);
	if (broken)
		return createException(TQ_MAL, fcn, "53100!tique: the engine failed to write for want of disk space, so "
				       "its log may miss that write: writes are refused (reads are still served) until the "
				       "database is opened again; free space on its disk, then restart it (recovery replays "
				       "the log)");
	struct statvfs fs;
	if (min_free <= 0 || !dir[0] || statvfs(dir, &fs) != 0)
		return NULL;
	tq_lng free_bytes = (tq_lng) fs.f_bavail * (tq_lng) fs.f_frsize;
	if (free_bytes >= min_free)
		return NULL;
	return createException(TQ_MAL, fcn, "53100!tique: the disk holding the database is full: %lld MB free in %s, "
			       "under the %lld MB tique keeps free so the engine's log stays intact; writes are refused "
			       "(reads are still served) until space returns: free space on that disk or grow it, then "
			       "run the transaction again",
			       (long long) (free_bytes >> 20), dir, (long long) (min_free >> 20));
}

static char *
TQstorage_failed(int *ret)
{
	pthread_mutex_lock(&lock);
	storage_broken = true;
	pthread_mutex_unlock(&lock);
	*ret = 1;
	return NULL;
}

static char *
TQstorage_ok(int *ret)
{
	*ret = 1;
	return storage_refusal("tique.storage_ok");
}

static char *
TQstorage_room(tq_lng *ret)
{
	char dir[sizeof(storage_dir)];
	pthread_mutex_lock(&lock);
	tq_lng min_free = storage_min_free;
	memcpy(dir, storage_dir, sizeof(dir));
	pthread_mutex_unlock(&lock);
	struct statvfs fs;
	if (min_free <= 0 || !dir[0] || statvfs(dir, &fs) != 0) {
		*ret = INT64_MAX;
		return NULL;
	}
	*ret = (tq_lng) fs.f_bavail * (tq_lng) fs.f_frsize - min_free;
	return NULL;
}

static int64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static slot_t *
slot_of(tq_lng c)
{
	return &ring[(uint64_t) c % RING];
}

/* c's slot, if it still holds c (not reused by a later timestamp, and c was handed out); caller holds the lock */
static slot_t *
slot_holding(tq_lng c)
{
	slot_t *s = slot_of(c);
	return c > 0 && c <= last_cts && s->cts == c ? s : NULL;
}

/* state of c */
static int
state_of(tq_lng c)
{
	if (c <= 0 || c > last_cts)
		return FREE;
	slot_t *s = slot_of(c);
	if (c <= sts) /* settled; an abandoned slot keeps saying so until reused, for its late owner */
		return s->cts == c && s->state == ABANDONED ? ABANDONED : DONE;
	return s->state;
}

static void
set_state(tq_lng c, int state)
{
	slot_t *s = slot_of(c);
	s->cts = c;
	s->state = state;
	s->since_ms = now_ms();
}

/* move both watermarks over every slot that allows it; caller holds the lock */
static void
move_watermarks(void)
{
	bool moved = false;
	while (published < last_cts) {
		int st = state_of(published + 1);
		if (st == FREE || st == TAKEN)
			break;
		published++;
		moved = true;
	}
	while (sts < published) {
		int st = state_of(sts + 1);
		if (st != DONE && st != ABANDONED)
			break;
		sts++;
		moved = true;
	}
	if (moved)
		pthread_cond_broadcast(&changed);
}

/* abandon c's stale predecessors that hold up the watermark 'wm'; caller holds the lock */
static void
abandon_stale(tq_lng wm, tq_lng c)
{
	int64_t now = now_ms();
	for (tq_lng p = wm + 1; p < c; p++) {
		slot_t *s = slot_of(p);
		int st = state_of(p);
		if ((st == TAKEN || st == PUBLISHED) && !s->waiting && now - s->since_ms >= lease_ms) {
			set_state(p, ABANDONED);
			abandoned_total++;
		}
	}
	move_watermarks();
}

/* wait until *wm >= target; returns 0, ETIMEDOUT, or EAGAIN behind a stale DECIDING slot; caller holds the lock */
static int
wait_for(const tq_lng *wm, tq_lng target, tq_lng c, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	while (*wm < target) {
		abandon_stale(*wm, c);
		if (*wm >= target)
			break;
		int64_t now = now_ms();
		if (now >= deadline)
			return ETIMEDOUT;
		slot_t *b = slot_of(*wm + 1);
		if (state_of(*wm + 1) == DECIDING && now - b->since_ms >= lease_ms)
			return EAGAIN; /* the caller settles it from its verdict (see TQverdict) and waits again */
		int64_t step = deadline - now;
		if (step > 50)
			step = 50; /* wake up now and then to check leases */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += step / 1000;
		ts.tv_nsec += (step % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&changed, &lock, &ts);
	}
	return 0;
}

static char *
blocker_error(const char *fcn, tq_lng c, tq_lng wm, int timeout_ms)
{
	tq_lng p = wm + 1;
	int st = state_of(p);
	/* TQ004: the blocker decided but never finished, so the driver can settle it (errors.CommitStuck) */
	return createException(TQ_MAL, fcn,
			       "%s!tique: commit %lld waited %d ms for commit %lld (state %s); "
			       "its client may have died: recovery or the lease (%lld ms) will settle it",
			       st == DECIDING ? "TQ004" : "HYT00", (long long) c, timeout_ms, (long long) p,
			       state_names[st], (long long) lease_ms);
}

static char *
check_cts(const char *fcn, tq_lng c)
{
	if (c == LNG_NIL || c <= 0 || c > last_cts)
		return createException(TQ_MAL, fcn, "42000!tique: %lld is not a commit timestamp handed out "
				       "(last is %lld)", (long long) c, (long long) last_cts);
	return NULL;
}


/* ---- snapshots in use ------------------------------------------------------------------------------------- */

#define PINS 65536 /* open addressing on txid; a live transaction needs one entry */
#define PIN_EMPTY 0
#define PIN_GONE (-1)

typedef struct {
	tq_lng txid; /* PIN_EMPTY, PIN_GONE or an id */
	tq_lng sts;
	int64_t until_ms;
	tq_lng session; /* who began it (see who_arg; 0: begun unchecked, by tique's owner) */
} pin_t;

static pin_t pins[PINS];
static int pins_live = 0;
static int pins_gone = 0; /* PIN_GONE entries: a lookup that misses probes past every one of them */
static int64_t ckpt_owner = 0, ckpt_until_ms = 0;
/* counts the checkpointer lock's changes of hands: a run fences its writes with the count it began under, so a
 * run that lost the lock (it stalled past its lease, another ran) writes nothing it read before */
static int64_t ckpt_epoch = 0;

static pin_t *
pin_find(tq_lng txid)
{
	/* ids are positive: 0 and -1 are the markers of a free entry, which a caller must never find (dropping
	 * one would count a live pin fewer, and the horizon's scan would then stop before a live snapshot) */
	if (txid <= 0)
		return NULL;
	for (uint64_t i = 0; i < PINS; i++) {
		pin_t *p = &pins[((uint64_t) txid + i) % PINS];
		if (p->txid == txid)
			return p;
		if (p->txid == PIN_EMPTY)
			return NULL;
	}
	return NULL;
}

static void
pin_drop(pin_t *p)
{
	p->txid = PIN_GONE;
	pins_live--;
	pins_gone++;
}

/* Put every live pin back into a table without PIN_GONE entries. Ids are handed out in order, so without this
 * the table fills with PIN_GONE after PINS transactions and every lookup that misses scans all of it under the
 * global lock. Only from pin_add: a scan that drops pins (pins_scan) must not see entries move. */
static void
pins_rehash(void)
{
	static pin_t old[PINS];
	memcpy(old, pins, sizeof(pins));
	memset(pins, 0, sizeof(pins));
	for (int i = 0; i < PINS; i++) {
		if (old[i].txid <= 0)
			continue;
		for (uint64_t j = 0; j < PINS; j++) {
			pin_t *p = &pins[((uint64_t) old[i].txid + j) % PINS];
			if (p->txid == PIN_EMPTY) {
				*p = old[i];
				break;
			}
		}
	}
	pins_gone = 0;
}

static bool
pin_live(pin_t *p, int64_t now)
{
	if (p == NULL)
		return false;
	if (p->until_ms <= now) { /* ran out: gone for good, a late renew must not bring it back */
		pin_drop(p);
		return false;
	}
	return true;
}

/* Transaction ids are bound to the kernel session (and user) that began them. A call acting for a transaction
 * passes `who`: the caller's user id * 2^20 + its session id + 1 (tique.who(), filled in by the SQL functions
 * PUBLIC may call: sequencer.SESSION_FUNCTIONS; with the user, a session id reused by another user's client is
 * another `who`), or 0 from tique's owner (recovery, the checkpointer), which may act for any. */
static tq_lng
who_arg(const tq_lng *who)
{
	return *who == LNG_NIL ? -1 : *who;
}

/* who may act for what: the owner's unchecked calls (who 0) for any; a session for its own only. What the owner
 * began unchecked (session 0: tique's owner runs its own transactions so, at no cost) is the owner's alone. */
static bool
acts_for(tq_lng who, tq_lng session)
{
	return who == 0 || who == session;
}

static char *
not_yours(const char *fcn, const char *what, tq_lng id)
{
	return createException(TQ_MAL, fcn, "42501!tique: %s %lld belongs to another session: a session acts only for "
			       "the transactions it began", what, (long long) id);
}

static char *
pin_add(tq_lng txid, tq_lng s, int64_t until, tq_lng session)
{
	if (pins_gone > PINS / 4)
		pins_rehash();
	for (uint64_t i = 0; i < PINS; i++) {
		pin_t *p = &pins[((uint64_t) txid + i) % PINS];
		if (p->txid == PIN_EMPTY || p->txid == PIN_GONE) {
			if (p->txid == PIN_GONE)
				pins_gone--;
			p->txid = txid;
			p->sts = s;
			p->until_ms = until;
			p->session = session;
			pins_live++;
			return NULL;
		}
	}
	return createException(TQ_MAL, "tique.begin", "40001!tique: %d transactions running, the limit; retry", PINS);
}

static int
lease_arg(const int *ms)
{
	return *ms == INT_NIL || *ms <= 0 ? 60000 : *ms;
}

static char *
TQbegin(tq_lng *ret, const tq_lng *prev, const int *lease, const tq_lng *who_)
{
	char *err;
	tq_lng who = who_arg(who_);
	pthread_mutex_lock(&lock);
	if (recovering) {
		pthread_mutex_unlock(&lock);
		return still_recovering("tique.begin_txn");
	}
	if (*prev != LNG_NIL && *prev > 0) {
		pin_t *p = pin_find(*prev);
		if (p && acts_for(who, p->session)) /* another session's transaction is left alone */
			pin_drop(p);
	}
	tq_lng txid = last_txid + 1;
	if ((err = pin_add(txid, sts, now_ms() + lease_arg(lease), who)) == NULL)
		*ret = last_txid = txid;
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQsnapshot_of(tq_lng *ret, const tq_lng *txid)
{
	char *err = NULL;
	pthread_mutex_lock(&lock);
	pin_t *p = pin_find(*txid);
	if (pin_live(p, now_ms()))
		*ret = p->sts;
	else
		err = createException(TQ_MAL, "tique.snapshot_of", "TQ003!tique: transaction %lld holds no snapshot "
				      "(its lease ran out); retry it", (long long) *txid);
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQrenew(int *ret, const tq_lng *txid, const int *lease, const tq_lng *who)
{
	char *err = NULL;
	pthread_mutex_lock(&lock);
	int64_t now = now_ms();
	pin_t *p = pin_find(*txid);
	if (p && !acts_for(who_arg(who), p->session)) {
		err = not_yours("tique.renew", "transaction", *txid);
	} else {
		*ret = pin_live(p, now);
		if (*ret)
			p->until_ms = now + lease_arg(lease);
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* ends txid's pin; another session's is left alone (0), so ending a stale id never fails */
static char *
TQend(int *ret, const tq_lng *txid, const tq_lng *who)
{
	pthread_mutex_lock(&lock);
	pin_t *p = pin_find(*txid);
	*ret = p != NULL && acts_for(who_arg(who), p->session);
	if (*ret)
		pin_drop(p);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* caller holds the lock: the horizon and the oldest live id, dropping pins whose lease ran out */
static void
pins_scan(tq_lng *horizon, tq_lng *oldest)
{
	int64_t now = now_ms();
	*horizon = sts;
	*oldest = last_txid + 1;
	for (int i = 0; i < PINS && pins_live > 0; i++) {
		pin_t *p = &pins[i];
		if (p->txid <= 0 || !pin_live(p, now))
			continue;
		if (p->sts < *horizon)
			*horizon = p->sts;
		if (p->txid < *oldest)
			*oldest = p->txid;
	}
}

static char *
TQhorizon(tq_lng *ret)
{
	tq_lng oldest;
	pthread_mutex_lock(&lock);
	pins_scan(ret, &oldest);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQoldest_txid(tq_lng *ret)
{
	tq_lng horizon;
	pthread_mutex_lock(&lock);
	pins_scan(&horizon, ret);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQpins(int *ret)
{
	tq_lng h, o;
	pthread_mutex_lock(&lock);
	pins_scan(&h, &o);
	*ret = pins_live;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* The lock's epoch when owner now holds the checkpointer lock (taken or renewed; > 0), else minus the owner
 * holding it. Under the module's mutex. */
static tq_lng
ckpt_take(tq_lng owner, const int *lease)
{
	int64_t now = now_ms();
	if (ckpt_owner == 0 || ckpt_owner == owner || ckpt_until_ms <= now) {
		if (ckpt_owner != owner)
			ckpt_epoch++;
		ckpt_owner = owner;
		ckpt_until_ms = now + lease_arg(lease);
		return ckpt_epoch;
	}
	return -ckpt_owner;
}

/* 0 when owner now holds the checkpointer lock (taken or renewed), else the owner holding it */
static char *
TQckpt_acquire(tq_lng *ret, const tq_lng *owner, const int *lease)
{
	pthread_mutex_lock(&lock);
	tq_lng got = ckpt_take(*owner, lease);
	*ret = got > 0 ? 0 : -got;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* ckpt_acquire, answering the lock's epoch (> 0) when owner now holds it, else minus the holder */
static char *
TQckpt_lock(tq_lng *ret, const tq_lng *owner, const int *lease)
{
	pthread_mutex_lock(&lock);
	*ret = ckpt_take(*owner, lease);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* 1, renewing the lease, when owner has held the lock since it took it at epoch; else TQ005: the run lost it */
static char *
TQckpt_fence(int *ret, const tq_lng *owner, const tq_lng *epoch, const int *lease)
{
	pthread_mutex_lock(&lock);
	int held = ckpt_owner == *owner && ckpt_epoch == *epoch;
	if (held)
		ckpt_until_ms = now_ms() + lease_arg(lease);
	pthread_mutex_unlock(&lock);
	if (!held)
		return createException(TQ_MAL, "tique.ckpt_fence",
				       "TQ005!tique: this checkpointer lost its lock (it stalled past its lease and "
				       "another one took it): its run stops, having written nothing since");
	*ret = 1;
	return NULL;
}

static char *
TQckpt_release(int *ret, const tq_lng *owner)
{
	pthread_mutex_lock(&lock);
	*ret = ckpt_owner == *owner;
	if (*ret)
		ckpt_owner = 0;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQnext_txid(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	if (recovering) {
		pthread_mutex_unlock(&lock);
		return still_recovering("tique.next_txid");
	}
	*ret = ++last_txid;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* a new commit timestamp owned by txid (0: unknown), TAKEN; caller holds the lock */
static char *
take_cts(const char *fcn, tq_lng txid, tq_lng session, tq_lng *ret)
{
	if (recovering)
		return still_recovering(fcn);
	if (last_cts - sts >= RING - 1)
		return createException(TQ_MAL, fcn, "40001!tique: %d commits in flight, the limit; retry", RING - 1);
	*ret = ++last_cts;
	set_state(*ret, TAKEN);
	slot_t *s = slot_of(*ret);
	s->txid = txid;
	s->session = session;
	s->verdict = -1;
	s->waiting = 0;
	s->early = 0;
	return NULL;
}

static char *
TQnext_cts(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	char *err = take_cts("tique.next_cts", 0, 0, ret);
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQnext_cts_for(tq_lng *ret, const tq_lng *txid, const tq_lng *who_)
{
	const char *fcn = "tique.next_cts_for";
	tq_lng who = who_arg(who_);
	char *err = storage_refusal(fcn); /* before a commit record: a full disk refuses it */
	if (err)
		return err;
	pthread_mutex_lock(&lock);
	pin_t *p = pin_find(*txid);
	if (!recovering && !pin_live(p, now_ms()))
		err = createException(TQ_MAL, fcn, "TQ003!tique: transaction %lld holds no snapshot (its lease ran out, "
				      "so the checkpointer may have folded what it read); retry it", (long long) *txid);
	else if (p && !acts_for(who, p->session))
		err = not_yours(fcn, "transaction", *txid);
	else
		err = take_cts(fcn, *txid, p ? p->session : who, ret);
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQsts(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = sts;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQpublished(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = published;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
abandoned(const char *fcn, tq_lng c)
{
	return createException(TQ_MAL, fcn, "TQ003!tique: commit %lld was abandoned after its lease (%lld ms) ran out; "
			       "retry the transaction", (long long) c, (long long) lease_ms);
}

/* the owner of published c waits until every smaller timestamp is published; caller holds the lock */
static char *
await_earlier(const char *fcn, tq_lng c, int timeout, tq_lng *ret)
{
	slot_t *s = slot_of(c);
	s->waiting++;
	int rc = wait_for(&published, c - 1, c, timeout);
	s->waiting--;
	s->since_ms = now_ms(); /* its lease runs from here: the owner was alive until now */
	if (rc != 0)
		return blocker_error(fcn, c, published, timeout);
	*ret = published;
	return NULL;
}

static char *
TQpublish(tq_lng *ret, const tq_lng *cts, const int *timeout_ms, const tq_lng *who)
{
	const char *fcn = "tique.publish";
	tq_lng c = *cts;
	int timeout = *timeout_ms == INT_NIL ? 0 : *timeout_ms;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if (!acts_for(who_arg(who), slot_of(c)->session)) {
			err = not_yours(fcn, "commit", c);
		} else if (st == ABANDONED) {
			err = abandoned(fcn, c);
		} else if (st != TAKEN) {
			err = createException(TQ_MAL, fcn, "42000!tique: commit %lld is %s, not taken",
					      (long long) c, state_names[st]);
		} else {
			set_state(c, PUBLISHED);
			move_watermarks();
			err = await_earlier(fcn, c, timeout, ret);
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* next_cts_for, inside the statement writing c's commit record; notes whether every smaller timestamp is
 * published by now (their records committed), so that a statement of the owner starting after this one sees
 * every earlier record without waiting (publish_own) */
static char *
TQrecord_cts(tq_lng *ret, const tq_lng *txid, const tq_lng *who)
{
	char *err = TQnext_cts_for(ret, txid, who);
	if (err)
		return err;
	pthread_mutex_lock(&lock);
	slot_t *s = slot_holding(*ret);
	if (s)
		s->early = published >= *ret - 1;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* the owner txid publishes its commit c from inside its certification statement (c's record is committed: the
 * statement started after it). Returns c when every smaller timestamp was published before the record statement
 * ended, so the statement's snapshot holds every earlier record and its certification stands; -c otherwise:
 * the owner waits (await_published) and certifies again. Idempotent: the engine may call it more than once. */
static char *
TQpublish_own(tq_lng *ret, const tq_lng *txid, const tq_lng *who)
{
	const char *fcn = "tique.publish_own";
	char *err = NULL;
	pthread_mutex_lock(&lock);
	tq_lng c = 0;
	for (tq_lng p = last_cts; p > sts && c == 0; p--) { /* the commits in flight: few */
		slot_t *s = slot_holding(p);
		if (s && s->txid == *txid)
			c = p;
	}
	int st = c ? state_of(c) : FREE;
	if (c && !acts_for(who_arg(who), slot_of(c)->session)) {
		err = not_yours(fcn, "commit", c);
	} else if (st == TAKEN || st == PUBLISHED) {
		if (st == TAKEN) {
			set_state(c, PUBLISHED);
			move_watermarks();
		}
		*ret = slot_of(c)->early ? c : -c;
	} else if (st == ABANDONED || st == FREE) {
		err = createException(TQ_MAL, fcn, "TQ003!tique: the commit of transaction %lld was abandoned after its "
				      "lease (%lld ms) ran out; retry the transaction", (long long) *txid,
				      (long long) lease_ms);
	} else {
		err = createException(TQ_MAL, fcn, "42000!tique: commit %lld of transaction %lld is %s, not taken",
				      (long long) c, (long long) *txid, state_names[st]);
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* after publish_own returned -c: wait until every smaller timestamp is published, as publish does */
static char *
TQawait_published(tq_lng *ret, const tq_lng *cts, const int *timeout_ms)
{
	const char *fcn = "tique.await_published";
	tq_lng c = *cts;
	int timeout = *timeout_ms == INT_NIL ? 0 : *timeout_ms;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if (st == ABANDONED) {
			err = abandoned(fcn, c);
		} else if (st != PUBLISHED) {
			err = createException(TQ_MAL, fcn, "42000!tique: commit %lld is %s, not published",
					      (long long) c, state_names[st]);
		} else {
			err = await_earlier(fcn, c, timeout, ret);
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
decide(tq_lng *ret, const tq_lng *cts, const int *ok, tq_lng who)
{
	const char *fcn = "tique.decide";
	tq_lng c = *cts;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if (!acts_for(who, slot_of(c)->session)) {
			err = not_yours(fcn, "commit", c);
		} else if (*ok == INT_NIL) {
			err = createException(TQ_MAL, fcn, "42000!tique: decide needs a verdict (1 or 0)");
		} else if (st == TAKEN || st == PUBLISHED) {
			set_state(c, DECIDING);
			slot_of(c)->verdict = *ok != 0;
			*ret = c;
		} else if (st == ABANDONED) {
			err = abandoned(fcn, c);
		} else {
			err = createException(TQ_MAL, fcn, "42000!tique: commit %lld is %s, cannot decide",
					      (long long) c, state_names[st]);
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQdecide(tq_lng *ret, const tq_lng *cts, const int *ok)
{
	return decide(ret, cts, ok, 0);
}

static char *
TQdecide_as(tq_lng *ret, const tq_lng *cts, const int *ok, const tq_lng *who)
{
	return decide(ret, cts, ok, who_arg(who));
}

static char *
TQadvance(tq_lng *ret, const tq_lng *cts, const int *timeout_ms)
{
	const char *fcn = "tique.advance";
	tq_lng c = *cts;
	int timeout = *timeout_ms == INT_NIL ? 0 : *timeout_ms;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if (st != DONE && st != ABANDONED)
			set_state(c, DONE);
		move_watermarks();
		if (timeout > 0 && wait_for(&sts, c, c, timeout) != 0)
			err = blocker_error(fcn, c, sts, timeout);
		else
			*ret = sts;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQabandon(tq_lng *ret, const tq_lng *cts)
{
	const char *fcn = "tique.abandon";
	tq_lng c = *cts;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		*ret = 0;
		if (st != DONE && st != ABANDONED) {
			set_state(c, ABANDONED);
			abandoned_total++;
			move_watermarks();
			*ret = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* abandon c if it is stuck before deciding for longer than the lease (as a waiter would): 1 if abandoned */
static char *
TQexpire(tq_lng *ret, const tq_lng *cts)
{
	const char *fcn = "tique.expire";
	tq_lng c = *cts;
	char *err;
	pthread_mutex_lock(&lock);
	*ret = 0;
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		slot_t *s = slot_of(c);
		if ((st == TAKEN || st == PUBLISHED) && !s->waiting && now_ms() - s->since_ms >= lease_ms) {
			set_state(c, ABANDONED);
			abandoned_total++;
			move_watermarks();
			*ret = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* c's verdict once decided (1 committed, 0 aborted), -1 before or when this engine does not know c: a commit
 * stuck DECIDING (its owner died, or its outcome statement failed after decide) is settled by writing the
 * outcome its owner decided; a second copy of the same outcome is harmless, a different one impossible */
static char *
TQverdict(int *ret, const tq_lng *cts)
{
	pthread_mutex_lock(&lock);
	slot_t *s = slot_holding(*cts);
	*ret = s ? s->verdict : -1;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* the transaction that took c (next_cts_for), 0 if unknown */
static char *
TQowner(tq_lng *ret, const tq_lng *cts)
{
	pthread_mutex_lock(&lock);
	slot_t *s = slot_holding(*cts);
	*ret = s ? s->txid : 0;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQstate(int *ret, const tq_lng *cts)
{
	pthread_mutex_lock(&lock);
	*ret = state_of(*cts);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQreset(tq_lng *ret, const tq_lng *txid, const tq_lng *cts)
{
	const char *fcn = "tique.reset";
	if (*txid == LNG_NIL || *cts == LNG_NIL || *txid < 0 || *cts < 0)
		return createException(TQ_MAL, fcn, "42000!tique: reset needs two non-negative counters");
	pthread_mutex_lock(&lock);
	for (tq_lng c = sts + 1; c <= last_cts; c++)
		slot_of(c)->state = FREE;
	last_txid = *txid;
	last_cts = published = sts = *cts;
	memset(marks, 0, sizeof(marks)); /* every commit before the restart is at or below the floor */
	marks_used = 0;
	marks_floor = *cts;
	memset(pins, 0, sizeof(pins)); /* recovery: no transaction survives a restart */
	pins_live = 0;
	pins_gone = 0;
	recovering = false;
	pthread_cond_broadcast(&changed);
	*ret = sts;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQset_lease(tq_lng *ret, const int *ms)
{
	if (*ms == INT_NIL || *ms <= 0)
		return createException(TQ_MAL, "tique.set_lease", "42000!tique: the lease must be positive");
	pthread_mutex_lock(&lock);
	*ret = lease_ms;
	lease_ms = *ms;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQlast_txid(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = last_txid;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQlast_cts(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = last_cts;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQabandoned(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = abandoned_total;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* the lowest commit stuck in DECIDING for longer than the lease (its client may have died before advancing),
 * or 0: the driver settles it if its outcome is recorded */
static char *
TQstuck(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	int64_t now = now_ms();
	*ret = 0;
	for (tq_lng c = sts + 1; c <= last_cts; c++) {
		slot_t *s = slot_of(c);
		if (s->cts == c && s->state == DECIDING && now - s->since_ms >= lease_ms) {
			*ret = c;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

#define ID_COUNTERS 4096

static struct {
	tq_lng table;
	tq_lng last;
} id_counters[ID_COUNTERS];
static int id_counters_used = 0;

static char *
TQnext_ids(tq_lng *ret, const tq_lng *table, const int *n, const tq_lng *floor)
{
	char *err = NULL;
	int i;
	if (*table == LNG_NIL || *n == INT_NIL || *n < 0 || *floor == LNG_NIL)
		return createException(TQ_MAL, "tique.next_ids", "42000!tique: next_ids needs a table, n >= 0, a floor");
	pthread_mutex_lock(&lock);
	for (i = 0; i < id_counters_used && id_counters[i].table != *table; i++)
		;
	if (i == id_counters_used && (*floor < 0 || *n == 0)) {
		*ret = 0; /* unknown: the caller computes the floor */
	} else if (i == id_counters_used && id_counters_used == ID_COUNTERS) {
		err = createException(TQ_MAL, "tique.next_ids", "HY000!tique: more than %d tables with generated keys",
				      ID_COUNTERS);
	} else {
		if (i == id_counters_used) {
			id_counters[i].table = *table;
			id_counters[i].last = 0;
			id_counters_used++;
		}
		if (id_counters[i].last < *floor)
			id_counters[i].last = *floor;
		id_counters[i].last += *n;
		*ret = id_counters[i].last;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQcatalog_version(tq_lng *ret, const tq_lng *after)
{
	(void) after;
	pthread_mutex_lock(&lock);
	*ret = catalog_version;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQbump_catalog(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = ++catalog_version;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* the slot of table t's mark, or of an empty place for it (NULL: full); caller holds the lock */
static mark_t *
mark_of(tq_lng t)
{
	uint64_t h = (uint64_t) t * 0x9E3779B97F4A7C15ull;
	for (int i = 0; i < MARKS; i++) {
		mark_t *m = &marks[(h + (uint64_t) i) % MARKS];
		if (m->table == t || m->table == 0)
			return m;
	}
	return NULL;
}

static char *
TQwrote(tq_lng *ret, const tq_lng *cts, const tq_lng *table)
{
	*ret = *cts;
	if (*cts == LNG_NIL || *table == LNG_NIL)
		return NULL;
	pthread_mutex_lock(&lock);
	mark_t *m = mark_of(*table);
	if (m == NULL || (m->table == 0 && marks_used >= MARKS / 2)) {
		if (*cts > marks_floor) /* no room: every table counts as written at c */
			marks_floor = *cts;
	} else {
		if (m->table == 0) {
			m->table = *table;
			marks_used++;
		}
		if (*cts > m->mark)
			m->mark = *cts;
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQlast_write(tq_lng *ret, const tq_lng *after, const tq_lng *table)
{
	(void) after;
	pthread_mutex_lock(&lock);
	mark_t *m = *table == LNG_NIL ? NULL : mark_of(*table);
	tq_lng mark = m && m->table == *table ? m->mark : 0;
	*ret = mark > marks_floor ? mark : marks_floor;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* turns (see the header); a request's tables are bits of a 64-bit mask: a false conflict only waits */
#define TURNS 1024
#define TURN_LEASE_MAX_MS 60000 /* tique/turns.py TURN_LEASE_MS */
typedef struct {
	tq_lng ticket;
	tq_lng owner;
	tq_lng mask;
	int appends;
	int running;
	int64_t until_ms; /* 0: no lease (an owner in the kernel's own process) */
	long tid;	  /* the server thread that took it (a MAPI session's), 0: none */
} turn_t;
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed;
static turn_t turns[TURNS]; /* waiting or running, in the order they came */
static int turns_used = 0;
static tq_lng last_ticket = 0;

static void
turn_remove(int i)
{
	memmove(&turns[i], &turns[i + 1], (size_t) (turns_used - i - 1) * sizeof(turn_t));
	turns_used--;
}

static bool
turn_conflicts(const turn_t *a, const turn_t *b)
{
	return a->appends != b->appends && (a->mask & b->mask) != 0 && a->owner != b->owner;
}

/* an earlier conflicting request, or a running one; nested: only other owners' running ones */
static bool
turn_blocked(tq_lng ticket, bool nested)
{
	int me = -1;
	for (int i = 0; i < turns_used; i++)
		if (turns[i].ticket == ticket)
			me = i;
	if (me < 0)
		return false;
	for (int i = 0; i < turns_used; i++) {
		if (i == me || !turn_conflicts(&turns[i], &turns[me]))
			continue;
		if (turns[i].running || (!nested && i < me))
			return true;
	}
	return false;
}

/* Is the server thread tid of this process still there? A MAPI session's thread ends with its session: a client
 * killed while its reply was being written never runs the turn's end that followed its statement. (A thread id
 * reused meanwhile only leaves the turn to its lease.) */
static bool
thread_alive(long tid)
{
#ifdef __linux__
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%ld", tid);
	return tid == 0 || access(path, F_OK) == 0;
#else
	(void) tid;
	return true;
#endif
}

/* Only running requests lapse: a waiting one has its server thread in turn_take, which will run it. (Expiring
 * waiting ones let a request queued longer than its lease run beside the append it waited for.) threads: also
 * end running requests whose session thread is gone (looked at by waiters, once a second) */
static bool
turn_expire(int64_t now, bool threads)
{
	bool gone = false;
	for (int i = 0; i < turns_used;)
		if (turns[i].running && turns[i].until_ms != 0 &&
		    (turns[i].until_ms < now || (threads && !thread_alive(turns[i].tid)))) {
			turn_remove(i);
			gone = true;
		} else {
			i++;
		}
	return gone;
}

/* lapse_ms 0: an owner in the kernel's own process (tique_turn_local), whose requests never lapse */
static char *
turn_take(tq_lng *ret, bool appends, tq_lng mask, tq_lng owner, int lapse_ms)
{
	const char *fcn = "tique.turn";
	pthread_mutex_lock(&turn_lock);
	bool nested = false, ended = false;
	for (int i = 0; i < turns_used;)
		if (turns[i].owner == owner && lapse_ms > 0) {
			turn_remove(i); /* a MAPI client runs one statement at a time: its earlier request is over */
			ended = true;
		} else {
			nested |= turns[i].owner == owner;
			i++;
		}
	int64_t now = now_ms();
	if (turn_expire(now, false) || ended) /* who waited for them runs now, not at its next timed wake */
		pthread_cond_broadcast(&turn_changed);
	if (turns_used == TURNS) {
		pthread_mutex_unlock(&turn_lock);
		return createException(TQ_MAL, fcn, "40001!tique: too many statements waiting for their turn; retry");
	}
	turn_t *t = &turns[turns_used++];
	*t = (turn_t){.ticket = ++last_ticket, .owner = owner, .mask = mask, .appends = appends};
	t->until_ms = lapse_ms > 0 ? now + lapse_ms : 0;
#ifdef __linux__
	t->tid = lapse_ms > 0 ? (long) syscall(SYS_gettid) : 0;
#endif
	tq_lng ticket = t->ticket;
	int64_t looked = now; /* when this waiter last looked for gone sessions */
	while (turn_blocked(ticket, nested)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1; /* wake now and then: a lapsed request of a dead client ends only when someone looks */
		pthread_cond_timedwait(&turn_changed, &turn_lock, &ts);
		/* Once a second of waiting, however often other requests' ends woke it meanwhile (they may come more
		 * often than that, on other tables): look for running requests whose session is gone too */
		int64_t at = now_ms();
		bool threads = at - looked >= 1000;
		if (threads)
			looked = at;
		if (turn_expire(at, threads))
			pthread_cond_broadcast(&turn_changed);
	}
	bool found = false;
	for (int i = 0; i < turns_used; i++)
		if (turns[i].ticket == ticket) {
			found = true;
			turns[i].running = 1;
			if (turns[i].until_ms != 0)
				turns[i].until_ms = now_ms() + lapse_ms; /* the lease counts from the start of the statement */
		}
	pthread_mutex_unlock(&turn_lock);
	if (!found) /* ended while it waited (turn_end of its owner): it must not run without a turn */
		return createException(TQ_MAL, fcn, "40001!tique: the statement's turn was ended while it waited; retry");
	*ret = ticket; /* 0 never: tickets start at 1 */
	return NULL;
}

/* the SQL function: a MAPI client's request, which lapses (at most TURN_LEASE_MAX_MS after its statement began) */
char *
tique_turn(tq_lng *ret, const int *appends, const tq_lng *mask, const tq_lng *owner, const int *lease)
{
	if (*appends == INT_NIL || *mask == LNG_NIL || *owner == LNG_NIL || *owner == 0 || *lease == INT_NIL || *lease <= 0)
		return createException(TQ_MAL, "tique.turn", "42000!tique: turn needs appends, a mask, an owner, a lease > 0");
	return turn_take(ret, *appends != 0, *mask, *owner, *lease > TURN_LEASE_MAX_MS ? TURN_LEASE_MAX_MS : *lease);
}

/* C only, for the process that opened the kernel (tique/turns.py KernelTurns): the owner is a thread */
char *
tique_turn_local(tq_lng *ret, const int *appends, const tq_lng *mask, const tq_lng *owner)
{
	return turn_take(ret, *appends != 0, *mask, *owner, 0);
}

char *
tique_turn_end(int *ret, const tq_lng *owner, const tq_lng *ticket)
{
	int ended = 0;
	pthread_mutex_lock(&turn_lock);
	for (int i = 0; i < turns_used;)
		if (turns[i].owner == *owner && (*ticket == 0 || turns[i].ticket == *ticket)) {
			turn_remove(i);
			ended++;
		} else {
			i++;
		}
	if (ended)
		pthread_cond_broadcast(&turn_changed);
	pthread_mutex_unlock(&turn_lock);
	*ret = ended;
	return NULL;
}

/* The begin and the finish of a transaction of tique's owner (who 0), called by the process that loaded the
 * module without a statement (an embedded kernel's): the same functions in the order the SQL forms run them.
 * An error's message goes to msg (the engine's exception text, which the driver maps as it maps any) and the
 * result is -1. */
static int
local_error(char *err, char *msg, size_t size)
{
	snprintf(msg, size, "%s", err);
	freeException(err);
	return -1;
}

/* out: txid, sts, the lowest stuck commit, the catalog version, then the write mark of each of the ntables */
int
tique_begin_local(tq_lng prev, int lease, int ntables, const tq_lng *tables, tq_lng *out, char *msg, size_t size)
{
	tq_lng owner = 0;
	char *err = TQbegin(&out[0], &prev, &lease, &owner);
	if (err == NULL)
		err = TQsnapshot_of(&out[1], &out[0]);
	if (err == NULL)
		err = TQstuck(&out[2]);
	if (err == NULL)
		err = TQcatalog_version(&out[3], &out[0]);
	for (int i = 0; err == NULL && i < ntables; i++)
		err = TQlast_write(&out[4 + i], &out[0], &tables[i]);
	return err ? local_error(err, msg, size) : 0;
}

/* The catalog version (catalog_version()), read by the process that loaded the module: its embedded results' types
 * are kept per catalog version and read again around each query (tique/engine/result_types.py) */
tq_lng
tique_catalog_version_local(void)
{
	tq_lng version;
	pthread_mutex_lock(&lock);
	version = catalog_version;
	pthread_mutex_unlock(&lock);
	return version;
}

/* advance(cts, timeout_ms), then the pin of txid ends (not when the advance failed, as in the statement) */
int
tique_finish_local(tq_lng cts, int timeout_ms, tq_lng txid, tq_lng *sts_out, char *msg, size_t size)
{
	tq_lng owner = 0;
	int ended;
	char *err = TQadvance(sts_out, &cts, &timeout_ms);
	if (err == NULL)
		err = TQend(&ended, &txid, &owner);
	return err ? local_error(err, msg, size) : 0;
}

static char *
TQabi(int *ret)
{
	*ret = TIQUE_UDF_ABI;
	return NULL;
}

#define LNG {.type = "lng"}
#define INT {.type = "int"}
#define FN(name, impl, retc_, argc_, ...)                                                                    \
	{.mod = "tique", .fcn = name, .cname = #impl, .command = 1, .unsafe = 1, .retc = retc_, .argc = argc_, \
	 .imp = (MALfcn) impl, .args = (mel_arg[argc_]){__VA_ARGS__}}

static mel_func tique_functions[] = {
	FN("next_txid", TQnext_txid, 1, 1, LNG),
	FN("next_cts", TQnext_cts, 1, 1, LNG),
	FN("sts", TQsts, 1, 1, LNG),
	FN("published", TQpublished, 1, 1, LNG),
	FN("publish_as", TQpublish, 1, 4, LNG, LNG, INT, LNG),
	FN("decide", TQdecide, 1, 3, LNG, LNG, INT),
	FN("decide_as", TQdecide_as, 1, 4, LNG, LNG, INT, LNG),
	FN("verdict", TQverdict, 1, 2, INT, LNG),
	FN("owner", TQowner, 1, 2, LNG, LNG),
	FN("advance", TQadvance, 1, 3, LNG, LNG, INT),
	FN("abandon", TQabandon, 1, 2, LNG, LNG),
	FN("state", TQstate, 1, 2, INT, LNG),
	FN("reset", TQreset, 1, 3, LNG, LNG, LNG),
	FN("set_lease", TQset_lease, 1, 2, LNG, INT),
	FN("last_txid", TQlast_txid, 1, 1, LNG),
	FN("last_cts", TQlast_cts, 1, 1, LNG),
	FN("abandoned", TQabandoned, 1, 1, LNG),
	FN("stuck", TQstuck, 1, 1, LNG),
	FN("expire", TQexpire, 1, 2, LNG, LNG),
	FN("abi", TQabi, 1, 1, INT),
	FN("begin_as", TQbegin, 1, 4, LNG, LNG, INT, LNG),
	FN("snapshot_of", TQsnapshot_of, 1, 2, LNG, LNG),
	FN("renew_as", TQrenew, 1, 4, INT, LNG, INT, LNG),
	FN("end_as", TQend, 1, 3, INT, LNG, LNG),
	FN("horizon", TQhorizon, 1, 1, LNG),
	FN("oldest_txid", TQoldest_txid, 1, 1, LNG),
	FN("pins", TQpins, 1, 1, INT),
	FN("next_cts_as", TQnext_cts_for, 1, 3, LNG, LNG, LNG),
	FN("ckpt_acquire", TQckpt_acquire, 1, 3, LNG, LNG, INT),
	FN("ckpt_release", TQckpt_release, 1, 2, INT, LNG),
	FN("ckpt_lock", TQckpt_lock, 1, 3, LNG, LNG, INT),
	FN("ckpt_fence", TQckpt_fence, 1, 4, INT, LNG, LNG, INT),
	FN("next_ids", TQnext_ids, 1, 4, LNG, LNG, INT, LNG),
	FN("catalog_version", TQcatalog_version, 1, 2, LNG, LNG),
	FN("bump_catalog", TQbump_catalog, 1, 1, LNG),
	FN("storage_ok", TQstorage_ok, 1, 1, INT),
	FN("storage_room", TQstorage_room, 1, 1, LNG),
	FN("storage_failed", TQstorage_failed, 1, 1, INT),
	FN("record_cts_as", TQrecord_cts, 1, 3, LNG, LNG, LNG),
	FN("publish_own_as", TQpublish_own, 1, 3, LNG, LNG, LNG),
	FN("await_published", TQawait_published, 1, 3, LNG, LNG, INT),
	FN("wrote", TQwrote, 1, 3, LNG, LNG, LNG),
	FN("last_write", TQlast_write, 1, 3, LNG, LNG, LNG),
	FN("turn", tique_turn, 1, 5, LNG, INT, LNG, LNG, INT),
	FN("turn_end", tique_turn_end, 1, 3, INT, LNG, LNG),
	{.mod = ""},
};

static void __attribute__((constructor))
tique_udf_init(void)
{
	pthread_condattr_t attr;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	catalog_version = (tq_lng) wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
	recovering = getenv("TIQUE_HOLD_UNTIL_RECOVERED") != NULL;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&changed, &attr);
	pthread_cond_init(&turn_changed, &attr);
	pthread_condattr_destroy(&attr);
	mal_module("tique", NULL, tique_functions);
}
