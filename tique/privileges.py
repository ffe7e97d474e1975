"""Users and privileges: ordinary MonetDB users run tique with the privileges granted on their tables.

tique's schemas (``tique``, ``tique_data``) belong to the user who installed tique (the admin ``monetdb`` behind
``tique serve``). Measured on MonetDB 11.41: a user holds no privilege on another user's tables or functions
until one is granted, a view and a SQL function or procedure run with their owner's rights (a user with SELECT on
T reads the view T without any privilege on Storage or Cache; a granted procedure inserts into a table its caller
cannot), and GRANT works on views. So (``install``):

- PUBLIC reads tique's metadata and may INSERT commit records and reservations (the commit protocol runs in the
  client), but never UPDATE or DELETE them, and never writes ``tique.outcomes`` or ``tique.tables`` directly;
- an outcome is written only by the procedures below, which write what the C module says about the commit
  timestamp: the verdict decided for it, for the transaction that took it (``tique.owner``); advancing a
  timestamp (``advance_settled``) needs its outcome recorded;
- PUBLIC executes the functions a transaction needs; the rest (reset, set_lease, abandon, decide, advance,
  next_cts, ckpt_*, storage_failed, bump_catalog...) only the owner: recovery, the checkpointer and DDL are the
  admin's;
- the privileges on a tique table T (the view) are carried to its Storage and Cache by every GRANT/REVOKE sent
  through tique (``sync_table``): SELECT on T gives SELECT on both, INSERT/UPDATE/DELETE on T give INSERT on the
  Cache (tique's writes are appended versions); nobody but the owner may UPDATE or DELETE them.

Transaction ids are bound to the kernel session that began them: the functions PUBLIC calls to act for a
transaction (begin_txn's end of the previous one, renew, end_txn, next_cts_for, publish, and decide inside
put_outcome / close_outcome) pass the caller's user and session (``tique.who()``) to the C module, which refuses
another session's transaction (sequencer.SESSION_FUNCTIONS). The threat model this leaves is in the README, "Users and
privileges".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tique.catalog import DATA_SCHEMA, TableInfo
from tique.engine.base import RawConnection
from tique.errors import DatabaseError, ProgrammingError
from tique.params import literal

# The engine functions a client's transaction calls (begin, reads, commit, generated keys, free space).
PUBLIC_FUNCTIONS = (
    "abi",
    "sts",
    "begin_txn",
    "snapshot_of",
    "renew",
    "end_txn",
    "stuck",
    "catalog_version",
    "wrote",
    "last_write",
    "turn",
    "turn_end",
    "next_cts_for",
    "publish",
    "record_cts",
    "publish_own",
    "await_published",
    "verdict",
    "owner",
    "cts_state",
    "expire",
    "next_ids",
    "storage_ok",
    "storage_room",
    "advance_settled",
)
PUBLIC_PROCEDURES = ("put_outcome", "settle_outcome", "close_outcome")
PUBLIC_READ = ("commits", "outcomes", "reservations", "tables", "checkpoints")
PUBLIC_INSERT = ("commits", "reservations")

# Run with their owner's rights (MonetDB SQL functions and procedures do). States: 1 TAKEN, 2 PUBLISHED, 4 DONE,
# 5 ABANDONED (sequencer.py). decide/advance of 0 fail ("not a commit timestamp handed out").
PROTOCOL = (
    # step 4 of COMMIT: decide c with the verdict and record it, for the transaction that took c only, from the
    # session that began it (the C module checks)
    """CREATE OR REPLACE PROCEDURE tique.put_outcome(t BIGINT, c BIGINT, ok INT)
BEGIN
  INSERT INTO tique.outcomes SELECT t, tique.decide_as(CASE WHEN tique.owner(c) = t THEN c ELSE 0 END, ok,
    tique.who()), ok = 1;
END""",
    # a commit stuck DECIDING: the outcome its owner decided (outcomes.settle_if_decided)
    """CREATE OR REPLACE PROCEDURE tique.settle_outcome(c BIGINT)
BEGIN
  INSERT INTO tique.outcomes SELECT x.o, c, x.v = 1 FROM (SELECT tique.owner(c) AS o, tique.verdict(c) AS v) AS x
  WHERE x.v >= 0 AND x.o > 0;
END""",
    # the owner gives up its commit c before deciding it (outcomes.record_outcome): decided aborted first (only by
    # the session that began it), so nobody can decide it committed afterwards; a decided one keeps its verdict
    """CREATE OR REPLACE PROCEDURE tique.close_outcome(t BIGINT, c BIGINT)
BEGIN
  DECLARE d BIGINT;
  IF tique.owner(c) = t THEN
    IF tique.verdict(c) < 0 AND tique.cts_state(c) IN (1, 2) THEN
      SET d = tique.decide_as(c, 0, tique.who());
    END IF;
    INSERT INTO tique.outcomes SELECT t, c, tique.verdict(c) = 1;
  END IF;
END""",
    # advance c only once it is settled: its outcome recorded, or abandoned, or already done (a wait)
    """CREATE OR REPLACE FUNCTION tique.advance_settled(c BIGINT, ms INT) RETURNS BIGINT
BEGIN
  RETURN SELECT tique.advance(CASE WHEN tique.cts_state(c) IN (4, 5) OR EXISTS (SELECT 1 FROM tique.outcomes AS o
    WHERE o.cts = c AND o.txid = tique.owner(c)) THEN c ELSE 0 END, ms);
END""",
)


def owns_tique(conn: RawConnection) -> bool:
    """Whether this session's user owns tique's schema (or it does not exist yet): installs and runs recovery,
    the checkpointer and DDL, and writes tique's tables directly."""
    row = conn.execute(
        "SELECT COUNT(*), SUM(CASE WHEN a.name = CURRENT_USER THEN 1 ELSE 0 END) "
        "FROM sys.schemas s JOIN sys.auths a ON s.authorization = a.id WHERE s.name = 'tique'"
    ).rows[0]
    return not int(row[0]) or bool(row[1])


def install(conn: RawConnection) -> None:
    """The protocol procedures and PUBLIC's privileges on tique's schema (by its owner; idempotent). Made only
    when missing or made by a tique before sessions were checked: replacing a procedure other sessions call
    races with them on the engine's catalog."""
    present = {
        str(r[0]): str(r[1]).lower()
        for r in conn.execute(
            "SELECT f.name, f.func FROM sys.functions f JOIN sys.schemas s ON f.schema_id = s.id WHERE s.name = 'tique'"
        ).rows
    }
    for stmt in PROTOCOL:
        name = stmt.split("tique.", 1)[1].split("(", 1)[0]
        checks_session = "tique.who()" in stmt
        if name not in present or (checks_session and "tique.who()" not in present[name]):
            conn.execute(stmt)
    granted = _granted_to_public(conn)
    wanted = [f"GRANT SELECT ON tique.{t} TO PUBLIC" for t in PUBLIC_READ]
    wanted += [f"GRANT INSERT ON tique.{t} TO PUBLIC" for t in PUBLIC_INSERT]
    wanted += [f"GRANT EXECUTE ON FUNCTION tique.{f} TO PUBLIC" for f in PUBLIC_FUNCTIONS]
    wanted += [f"GRANT EXECUTE ON PROCEDURE tique.{p} TO PUBLIC" for p in PUBLIC_PROCEDURES]
    for stmt in wanted:
        if stmt not in granted:
            conn.execute(stmt)


def _granted_to_public(conn: RawConnection) -> set[str]:
    """The GRANT statements of ``install`` already in effect (MonetDB refuses to grant a privilege twice)."""
    rows = conn.execute(
        "SELECT o.name, o.kind, p.privileges FROM sys.privileges p JOIN ("
        "SELECT t.id, t.name, 'table' AS kind FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
        "WHERE s.name = 'tique' UNION ALL SELECT f.id, f.name, CASE WHEN f.type = 2 THEN 'procedure' "
        "ELSE 'function' END FROM sys.functions f JOIN sys.schemas s ON f.schema_id = s.id WHERE s.name = 'tique'"
        ") AS o ON p.obj_id = o.id JOIN sys.auths a ON p.auth_id = a.id WHERE a.name = 'public'"
    ).rows
    done = set()
    for name, kind, bits in rows:
        if kind == "table":
            for bit, word in ((1, "SELECT"), (4, "INSERT")):
                if int(bits) & bit:
                    done.add(f"GRANT {word} ON tique.{name} TO PUBLIC")
        else:
            done.add(f"GRANT EXECUTE ON {str(kind).upper()} tique.{name} TO PUBLIC")
    return done


# ---- privileges on tique's tables ----------------------------------------------------------------------------

SELECT, UPDATE, INSERT, DELETE = 1, 2, 4, 8
_BITS = {"SELECT": SELECT, "UPDATE": UPDATE, "INSERT": INSERT, "DELETE": DELETE}


def held(conn: RawConnection, info: TableInfo) -> int:
    """The privilege bits on T (the view) this session's user holds: its own, its role's and PUBLIC's."""
    rows = conn.execute(
        "SELECT p.privileges FROM sys.privileges p JOIN sys.tables t ON p.obj_id = t.id "
        "JOIN sys.schemas s ON t.schema_id = s.id JOIN sys.auths a ON p.auth_id = a.id "
        f"WHERE s.name = {literal(info.schema)} AND t.name = {literal(info.name)} "
        "AND a.name IN (CURRENT_USER, CURRENT_ROLE, 'public')"
    ).rows
    bits = 0
    for (value,) in rows:
        bits |= int(value)
    return bits


def may_read(bits: int) -> bool:
    return bool(bits & _BITS["SELECT"])


def require(user: str, bits: int, info: TableInfo, privilege: str) -> None:
    """Refuse a write the user holds no privilege for, naming the table and the privilege (the engine would also
    refuse the Cache append at the next flush, with its internal name and after the statement returned)."""
    if not bits & _BITS[privilege]:
        raise ProgrammingError(
            f"permission denied: user {user!r} has no {privilege} privilege on table {info.schema}.{info.name}; "
            f"ask its owner for GRANT {privilege} ON {info.schema}.{info.name} TO {user}",
            "42000",
        )


def _privileges_on(conn: RawConnection, schema: str, name: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT a.name, p.privileges FROM sys.privileges p JOIN sys.tables t ON p.obj_id = t.id "
        "JOIN sys.schemas s ON t.schema_id = s.id JOIN sys.auths a ON p.auth_id = a.id "
        f"WHERE s.name = {literal(schema)} AND t.name = {literal(name)}"
    ).rows
    out: dict[str, int] = {}
    for grantee, bits in rows:
        out[str(grantee)] = out.get(str(grantee), 0) | int(bits)
    return out


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sync_table(conn: RawConnection, info: TableInfo) -> None:
    """Give T's Storage and Cache the privileges its grantees hold on T: SELECT on T -> SELECT on both; any write
    on T -> INSERT on the Cache. Nothing else is ever granted on them."""
    if info.kind != "tx" or info.data_schema is None:
        return
    on_view = _privileges_on(conn, info.schema, info.name)
    assert info.data_base is not None
    for part, physical in (("storage", info.storage), ("cache", info.cache)):
        current = _privileges_on(conn, DATA_SCHEMA, f"{info.data_base}__{part}")
        for grantee in set(on_view) | set(current):
            want = 0
            view_bits = on_view.get(grantee, 0)
            if view_bits & SELECT:
                want |= SELECT
            if part == "cache" and view_bits & (INSERT | UPDATE | DELETE):
                want |= INSERT
            have = current.get(grantee, 0)
            who = "PUBLIC" if grantee == "public" else _quoted(grantee)
            for word, bit in _BITS.items():
                if want & bit and not have & bit:
                    conn.execute(f"GRANT {word} ON {physical} TO {who}")
                elif have & bit and not want & bit:
                    conn.execute(f"REVOKE {word} ON {physical} FROM {who}")


# ---- statements tique runs differently ----------------------------------------------------------------------

_CREATE_USER = re.compile(
    r"\s*CREATE\s+USER\s+(\"(?:[^\"]|\"\")+\"|\w+)\s+WITH\s+(ENCRYPTED\s+|UNENCRYPTED\s+)?PASSWORD\s+"
    r"('(?:[^']|'')*')",
    re.I,
)
_GRANT = re.compile(
    r"\s*(?:GRANT|REVOKE)\s+(?:GRANT\s+OPTION\s+FOR\s+)?(?:ALL(?:\s+PRIVILEGES)?|(?:SELECT|INSERT|UPDATE|DELETE|"
    r"TRUNCATE|REFERENCES)\b[^;]*?)\s+ON\s+(?:TABLE\s+)?((?:\"(?:[^\"]|\"\")+\"|\w+)(?:\.(?:\"(?:[^\"]|\"\")+\"|\w+))?)"
    r"\s+(?:TO|FROM)\s",
    re.I,
)


@dataclass(frozen=True)
class Access:
    """A statement run as sent, then what tique adds: the password set again (CREATE USER ``user``), or the
    privileges on ``table`` carried to its Storage and Cache (GRANT/REVOKE on a tique table)."""

    sql: str
    user: str | None = None
    password_clause: str | None = None
    table: tuple[str | None, str] | None = None  # (schema or None for the session's, name)


def access_statement(sql: str) -> Access | None:
    user = _CREATE_USER.match(sql)
    if user:
        return Access(sql, user=user.group(1), password_clause=f"{user.group(2) or ''}PASSWORD {user.group(3)}")
    grant = _GRANT.match(sql)
    if grant:
        parts = [_unquoted(p) for p in _split_name(grant.group(1))]
        return Access(sql, table=(parts[0] if len(parts) == 2 else None, parts[-1]))
    return None


def _split_name(name: str) -> list[str]:
    return re.findall(r"\"(?:[^\"]|\"\")+\"|\w+", name)


def _unquoted(part: str) -> str:
    return part[1:-1].replace('""', '"') if part.startswith('"') else part.lower()


def set_password_again(conn: RawConnection, user: str, password_clause: str) -> None:
    """MonetDB 11.41's embedded kernel (behind ``tique serve``) keeps a password from CREATE USER that never
    verifies: the login is refused with 'invalid credentials' (measured, plain and ENCRYPTED alike; neither the
    user's password nor '0' nor another user's verifies, so it is not the MAPI listener nor a shifted password
    slot). The same password set by ALTER USER verifies, also after a restart of the server."""
    try:
        conn.execute(f"ALTER USER {user} WITH {password_clause}")
    except DatabaseError as exc:
        raise ProgrammingError(
            f"user {user} was created, but setting its password for logins failed: {exc}; "
            f"run ALTER USER {user} WITH PASSWORD '...' as the admin"
        ) from None
