SELECT
  qty
FROM (
  SELECT
    "w",
    "i",
    "qty"
  FROM (
    SELECT
      "w",
      "i",
      "qty",
      tq_deleted,
      ROW_NUMBER() OVER (PARTITION BY "w", "i" ORDER BY tq_cts DESC NULLS FIRST, tq_seq DESC NULLS FIRST) AS tq_rk
    FROM (
      SELECT
        "w",
        "i",
        "qty",
        FALSE AS tq_deleted,
        CAST(0 AS BIGINT) AS tq_cts,
        0 AS tq_seq
      FROM "tique_data"."sys__stock__storage"
      WHERE
        (
          w = :p0
        ) AND (
          i = :p1
        )
      UNION ALL
      SELECT
        tq_c_1."w",
        tq_c_1."i",
        tq_c_1."qty",
        tq_c_1.tq_deleted,
        tq_t_1.cts AS tq_cts,
        tq_c_1.tq_seq
      FROM "tique_data"."sys__stock__cache" AS tq_c_1
      JOIN tique.outcomes AS tq_t_1
        ON tq_t_1.txid = tq_c_1.tq_txid
      WHERE
        tq_t_1.ok AND tq_t_1.cts <= :sts AND (
          tq_c_1.w = :p0
        ) AND (
          tq_c_1.i = :p1
        )
      UNION ALL
      SELECT
        tq_w_1."w",
        tq_w_1."i",
        tq_w_1."qty",
        tq_w_1.tq_deleted,
        CAST(9223372036854775807 AS BIGINT) AS tq_cts,
        tq_w_1.tq_seq
      FROM "tique_data"."sys__stock__cache" AS tq_w_1
      WHERE
        tq_w_1.tq_txid = :txid AND (
          tq_w_1.w = :p0
        ) AND (
          tq_w_1.i = :p1
        )
    ) AS tq_u_1
  ) AS tq_r_1
  WHERE
    tq_rk = 1 AND NOT tq_deleted
) AS stock
WHERE
  w = :p0 AND i = :p1
