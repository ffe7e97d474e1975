SELECT
  CAST(tq_i0 AS HUGEINT) AS tq_i0,
  CAST(tq_i1 AS HUGEINT) AS tq_i1,
  CAST(tq_i2 AS DECIMAL(38, 2)) AS tq_i2
FROM (
  SELECT
    id,
    id,
    bal
  FROM (
    SELECT
      "id",
      "bal"
    FROM (
      SELECT
        tq_s_1."id",
        tq_s_1."bal"
      FROM "tique_data"."sys__accounts__storage" AS tq_s_1
      WHERE
        NOT EXISTS(
          SELECT
            1
          FROM (
            SELECT
              tq_c_1a."id",
              tq_c_1a."bal",
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
              tq_w_1a."bal",
              tq_w_1a.tq_deleted,
              CAST(9223372036854775807 AS BIGINT) AS tq_cts,
              tq_w_1a.tq_seq
            FROM "tique_data"."sys__accounts__cache" AS tq_w_1a
            WHERE
              tq_w_1a.tq_txid = :txid
          ) AS tq_v_1
          WHERE
            tq_v_1."id" = tq_s_1."id"
        )
      UNION ALL
      SELECT
        "id",
        "bal"
      FROM (
        SELECT
          "id",
          "bal",
          tq_deleted,
          ROW_NUMBER() OVER (PARTITION BY "id" ORDER BY tq_cts DESC NULLS FIRST, tq_seq DESC NULLS FIRST) AS tq_rk
        FROM (
          SELECT
            tq_c_1."id",
            tq_c_1."bal",
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
            tq_w_1."bal",
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
  ) AS accounts
) AS tq_rows(tq_i0, tq_i1, tq_i2)
