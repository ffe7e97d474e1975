SELECT
  accounts."id" AS tq_old_0,
  accounts."id" AS tq_new_0,
  accounts."owner" AS tq_new_1,
  CAST(bal + :p0 AS HUGEINT) AS tq_new_2
FROM (
  SELECT
    "id",
    "owner",
    "bal"
  FROM (
    SELECT
      "id",
      "owner",
      "bal",
      tq_deleted,
      ROW_NUMBER() OVER (PARTITION BY "id" ORDER BY tq_cts DESC NULLS FIRST, tq_seq DESC NULLS FIRST) AS tq_rk
    FROM (
      SELECT
        "id",
        "owner",
        "bal",
        FALSE AS tq_deleted,
        CAST(0 AS BIGINT) AS tq_cts,
        0 AS tq_seq
      FROM "tique_data"."sys__accounts__storage"
      WHERE
        (
          id = :p1
        )
      UNION ALL
      SELECT
        tq_c_1."id",
        tq_c_1."owner",
        tq_c_1."bal",
        tq_c_1.tq_deleted,
        tq_t_1.cts AS tq_cts,
        tq_c_1.tq_seq
      FROM "tique_data"."sys__accounts__cache" AS tq_c_1
      JOIN tique.outcomes AS tq_t_1
        ON tq_t_1.txid = tq_c_1.tq_txid
      WHERE
        tq_t_1.ok AND tq_t_1.cts <= :sts AND (
          tq_c_1.id = :p1
        )
      UNION ALL
      SELECT
        tq_w_1."id",
        tq_w_1."owner",
        tq_w_1."bal",
        tq_w_1.tq_deleted,
        CAST(9223372036854775807 AS BIGINT) AS tq_cts,
        tq_w_1.tq_seq
      FROM "tique_data"."sys__accounts__cache" AS tq_w_1
      WHERE
        tq_w_1.tq_txid = :txid AND (
          tq_w_1.id = :p1
        )
    ) AS tq_u_1
  ) AS tq_r_1
  WHERE
    tq_rk = 1 AND NOT tq_deleted
) AS accounts
WHERE
  id = :p1
