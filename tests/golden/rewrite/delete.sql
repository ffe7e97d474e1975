SELECT
  orders."o_id"
FROM (
  SELECT
    "o_id",
    "o_acc"
  FROM (
    SELECT
      tq_s_1."o_id",
      tq_s_1."o_acc"
    FROM "tique_data"."sys__orders__storage" AS tq_s_1
    WHERE
      NOT EXISTS(
        SELECT
          1
        FROM (
          SELECT
            tq_c_1a."o_id",
            tq_c_1a."o_acc",
            tq_c_1a.tq_deleted,
            tq_t_1a.cts AS tq_cts,
            tq_c_1a.tq_seq
          FROM "tique_data"."sys__orders__cache" AS tq_c_1a
          JOIN tique.outcomes AS tq_t_1a
            ON tq_t_1a.txid = tq_c_1a.tq_txid
          WHERE
            tq_t_1a.ok AND tq_t_1a.cts <= :sts
          UNION ALL
          SELECT
            tq_w_1a."o_id",
            tq_w_1a."o_acc",
            tq_w_1a.tq_deleted,
            CAST(9223372036854775807 AS BIGINT) AS tq_cts,
            tq_w_1a.tq_seq
          FROM "tique_data"."sys__orders__cache" AS tq_w_1a
          WHERE
            tq_w_1a.tq_txid = :txid
        ) AS tq_v_1
        WHERE
          tq_v_1."o_id" = tq_s_1."o_id"
      )
      AND (
        tq_s_1.o_acc = :p0
      )
    UNION ALL
    SELECT
      "o_id",
      "o_acc"
    FROM (
      SELECT
        "o_id",
        "o_acc",
        tq_deleted,
        ROW_NUMBER() OVER (PARTITION BY "o_id" ORDER BY tq_cts DESC NULLS FIRST, tq_seq DESC NULLS FIRST) AS tq_rk
      FROM (
        SELECT
          tq_c_1."o_id",
          tq_c_1."o_acc",
          tq_c_1.tq_deleted,
          tq_t_1.cts AS tq_cts,
          tq_c_1.tq_seq
        FROM "tique_data"."sys__orders__cache" AS tq_c_1
        JOIN tique.outcomes AS tq_t_1
          ON tq_t_1.txid = tq_c_1.tq_txid
        WHERE
          tq_t_1.ok AND tq_t_1.cts <= :sts
        UNION ALL
        SELECT
          tq_w_1."o_id",
          tq_w_1."o_acc",
          tq_w_1.tq_deleted,
          CAST(9223372036854775807 AS BIGINT) AS tq_cts,
          tq_w_1.tq_seq
        FROM "tique_data"."sys__orders__cache" AS tq_w_1
        WHERE
          tq_w_1.tq_txid = :txid
      ) AS tq_u_1
    ) AS tq_r_1
    WHERE
      tq_rk = 1 AND NOT tq_deleted AND (
        o_acc = :p0
      )
  ) AS tq_b_1
) AS orders
WHERE
  o_acc = :p0
