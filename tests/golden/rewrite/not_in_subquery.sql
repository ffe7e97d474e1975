SELECT
  id
FROM (
  SELECT
    "id"
  FROM (
    SELECT
      tq_s_1."id"
    FROM "tique_data"."sys__accounts__storage" AS tq_s_1
    LEFT JOIN (
      SELECT
        "id",
        TRUE AS tq_hit
      FROM (
        SELECT
          tq_c_1a."id",
          tq_c_1a.tq_deleted,
          tq_t_1a.cts AS tq_cts,
          tq_c_1a.tq_seq
        FROM "tique_data"."sys__accounts__cache" AS tq_c_1a
        JOIN tique.outcomes AS tq_t_1a
          ON tq_t_1a.txid = tq_c_1a.tq_txid
        WHERE
          tq_t_1a.ok AND tq_t_1a.cts <= :sts
        UNION ALL
        SELECT
          tq_w_1a."id",
          tq_w_1a.tq_deleted,
          CAST(9223372036854775807 AS BIGINT) AS tq_cts,
          tq_w_1a.tq_seq
        FROM "tique_data"."sys__accounts__cache" AS tq_w_1a
        WHERE
          tq_w_1a.tq_txid = :txid
      ) AS tq_h_1
    ) AS tq_v_1
      ON tq_v_1."id" = tq_s_1."id"
    WHERE
      tq_v_1.tq_hit IS NULL
    UNION ALL
    SELECT
      "id"
    FROM (
      SELECT
        "id",
        tq_deleted,
        ROW_NUMBER() OVER (PARTITION BY "id" ORDER BY tq_cts DESC NULLS FIRST, tq_seq DESC NULLS FIRST) AS tq_rk
      FROM (
        SELECT
          tq_c_1."id",
          tq_c_1.tq_deleted,
          tq_t_1.cts AS tq_cts,
          tq_c_1.tq_seq
        FROM "tique_data"."sys__accounts__cache" AS tq_c_1
        JOIN tique.outcomes AS tq_t_1
          ON tq_t_1.txid = tq_c_1.tq_txid
        WHERE
          tq_t_1.ok AND tq_t_1.cts <= :sts
        UNION ALL
        SELECT
          tq_w_1."id",
          tq_w_1.tq_deleted,
          CAST(9223372036854775807 AS BIGINT) AS tq_cts,
          tq_w_1.tq_seq
        FROM "tique_data"."sys__accounts__cache" AS tq_w_1
        WHERE
          tq_w_1.tq_txid = :txid
      ) AS tq_u_1
    ) AS tq_r_1
    WHERE
      tq_rk = 1 AND NOT tq_deleted
  ) AS tq_b_1
  LIMIT 1152921504606846976
) AS accounts
WHERE
  NOT id IN (
    SELECT
      o_acc
    FROM (
      SELECT
        "o_id",
        "o_acc"
      FROM (
        SELECT
          tq_s_2."o_id",
          tq_s_2."o_acc"
        FROM "tique_data"."sys__orders__storage" AS tq_s_2
        LEFT JOIN (
          SELECT
            "o_id",
            TRUE AS tq_hit
          FROM (
            SELECT
              tq_c_2a."o_id",
              tq_c_2a."o_acc",
              tq_c_2a.tq_deleted,
              tq_t_2a.cts AS tq_cts,
              tq_c_2a.tq_seq
            FROM "tique_data"."sys__orders__cache" AS tq_c_2a
            JOIN tique.outcomes AS tq_t_2a
              ON tq_t_2a.txid = tq_c_2a.tq_txid
            WHERE
              tq_t_2a.ok AND tq_t_2a.cts <= :sts
            UNION ALL
            SELECT
              tq_w_2a."o_id",
              tq_w_2a."o_acc",
              tq_w_2a.tq_deleted,
              CAST(9223372036854775807 AS BIGINT) AS tq_cts,
              tq_w_2a.tq_seq
            FROM "tique_data"."sys__orders__cache" AS tq_w_2a
            WHERE
              tq_w_2a.tq_txid = :txid
          ) AS tq_h_2
        ) AS tq_v_2
          ON tq_v_2."o_id" = tq_s_2."o_id"
        WHERE
          tq_v_2.tq_hit IS NULL
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
              tq_c_2."o_id",
              tq_c_2."o_acc",
              tq_c_2.tq_deleted,
              tq_t_2.cts AS tq_cts,
              tq_c_2.tq_seq
            FROM "tique_data"."sys__orders__cache" AS tq_c_2
            JOIN tique.outcomes AS tq_t_2
              ON tq_t_2.txid = tq_c_2.tq_txid
            WHERE
              tq_t_2.ok AND tq_t_2.cts <= :sts
            UNION ALL
            SELECT
              tq_w_2."o_id",
              tq_w_2."o_acc",
              tq_w_2.tq_deleted,
              CAST(9223372036854775807 AS BIGINT) AS tq_cts,
              tq_w_2.tq_seq
            FROM "tique_data"."sys__orders__cache" AS tq_w_2
            WHERE
              tq_w_2.tq_txid = :txid
          ) AS tq_u_2
        ) AS tq_r_2
        WHERE
          tq_rk = 1 AND NOT tq_deleted
      ) AS tq_b_2
      LIMIT 1152921504606846976
    ) AS orders
  )
