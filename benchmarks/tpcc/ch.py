"""CH-benCHmark's 22 analytical queries over the TPC-C schema (after cmu-db/benchbase's versions), in SQL that
MonetDB, PostgreSQL and tique's rewriter all accept. Where the reference needs something tique does not take
(Q15's view) or a plan no engine would survive (Q19's join inside an OR), the query is rewritten to the
equivalent form and says so; Q8 divides by NULLIF(..., 0) rather than fail on an empty year."""

from __future__ import annotations

T0 = "TIMESTAMP '2007-01-02 00:00:00'"
SUPP = "MOD((s_w_id * s_i_id), 10000)"
C_NATION = "ASCII(SUBSTRING(c_state FROM 1 FOR 1))"

QUERIES: dict[int, str] = {
    1: f"""SELECT ol_number, SUM(ol_quantity) AS sum_qty, SUM(ol_amount) AS sum_amount, AVG(ol_quantity) AS avg_qty,
        AVG(ol_amount) AS avg_amount, COUNT(*) AS count_order FROM order_line WHERE ol_delivery_d > {T0}
        GROUP BY ol_number ORDER BY ol_number""",
    2: f"""SELECT su_suppkey, su_name, n_name, i_id, i_name, su_address, su_phone, su_comment
        FROM item, supplier, stock, nation, region,
        (SELECT s_i_id AS m_i_id, MIN(s_quantity) AS m_s_quantity FROM stock, supplier, nation, region
         WHERE {SUPP} = su_suppkey AND su_nationkey = n_nationkey AND n_regionkey = r_regionkey
         AND r_name LIKE 'Europ%' GROUP BY s_i_id) AS m
        WHERE i_id = s_i_id AND {SUPP} = su_suppkey AND su_nationkey = n_nationkey AND n_regionkey = r_regionkey
        AND i_data LIKE '%b' AND r_name LIKE 'Europ%' AND i_id = m_i_id AND s_quantity = m_s_quantity
        ORDER BY n_name, su_name, i_id""",
    3: f"""SELECT ol_o_id, ol_w_id, ol_d_id, SUM(ol_amount) AS revenue, o_entry_d
        FROM customer, new_order, oorder, order_line
        WHERE c_state LIKE 'A%' AND c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id AND no_w_id = o_w_id
        AND no_d_id = o_d_id AND no_o_id = o_id AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
        AND o_entry_d > {T0} GROUP BY ol_o_id, ol_w_id, ol_d_id, o_entry_d ORDER BY revenue DESC, o_entry_d""",
    4: f"""SELECT o_ol_cnt, COUNT(*) AS order_count FROM oorder
        WHERE o_entry_d >= {T0} AND o_entry_d < TIMESTAMP '2012-01-02 00:00:00'
        AND EXISTS (SELECT * FROM order_line WHERE o_id = ol_o_id AND o_w_id = ol_w_id AND o_d_id = ol_d_id
                    AND ol_delivery_d >= o_entry_d)
        GROUP BY o_ol_cnt ORDER BY o_ol_cnt""",
    5: f"""SELECT n_name, SUM(ol_amount) AS revenue
        FROM customer, oorder, order_line, stock, supplier, nation, region
        WHERE c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id AND ol_o_id = o_id AND ol_w_id = o_w_id
        AND ol_d_id = o_d_id AND ol_w_id = s_w_id AND ol_i_id = s_i_id AND {SUPP} = su_suppkey
        AND {C_NATION} = su_nationkey AND su_nationkey = n_nationkey AND n_regionkey = r_regionkey
        AND r_name = 'Europe' AND o_entry_d >= {T0} GROUP BY n_name ORDER BY revenue DESC""",
    6: """SELECT SUM(ol_amount) AS revenue FROM order_line WHERE ol_delivery_d >= TIMESTAMP '1999-01-01 00:00:00'
        AND ol_delivery_d < TIMESTAMP '2020-01-01 00:00:00' AND ol_quantity BETWEEN 1 AND 100000""",
    7: f"""SELECT su_nationkey AS supp_nation, SUBSTRING(c_state FROM 1 FOR 1) AS cust_nation,
        EXTRACT(YEAR FROM o_entry_d) AS l_year, SUM(ol_amount) AS revenue
        FROM supplier, stock, order_line, oorder, customer, nation n1, nation n2
        WHERE ol_supply_w_id = s_w_id AND ol_i_id = s_i_id AND {SUPP} = su_suppkey AND ol_w_id = o_w_id
        AND ol_d_id = o_d_id AND ol_o_id = o_id AND c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id
        AND su_nationkey = n1.n_nationkey AND {C_NATION} = n2.n_nationkey
        AND ((n1.n_name = 'Germany' AND n2.n_name = 'Cambodia') OR (n1.n_name = 'Cambodia' AND n2.n_name = 'Germany'))
        GROUP BY su_nationkey, SUBSTRING(c_state FROM 1 FOR 1), EXTRACT(YEAR FROM o_entry_d)
        ORDER BY su_nationkey, cust_nation, l_year""",
    8: f"""SELECT EXTRACT(YEAR FROM o_entry_d) AS l_year,
        SUM(CASE WHEN n2.n_name = 'Germany' THEN ol_amount ELSE 0 END) / NULLIF(SUM(ol_amount), 0) AS mkt_share
        FROM item, supplier, stock, order_line, oorder, customer, nation n1, nation n2, region
        WHERE i_id = s_i_id AND ol_i_id = s_i_id AND ol_supply_w_id = s_w_id AND {SUPP} = su_suppkey
        AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id AND c_id = o_c_id AND c_w_id = o_w_id
        AND c_d_id = o_d_id AND n1.n_nationkey = {C_NATION} AND n1.n_regionkey = r_regionkey AND ol_i_id < 1000
        AND r_name = 'Europe' AND su_nationkey = n2.n_nationkey AND i_data LIKE '%b' AND i_id = ol_i_id
        GROUP BY EXTRACT(YEAR FROM o_entry_d) ORDER BY l_year""",
    9: f"""SELECT n_name, EXTRACT(YEAR FROM o_entry_d) AS l_year, SUM(ol_amount) AS sum_profit
        FROM item, stock, supplier, order_line, oorder, nation
        WHERE ol_i_id = s_i_id AND ol_supply_w_id = s_w_id AND {SUPP} = su_suppkey AND ol_w_id = o_w_id
        AND ol_d_id = o_d_id AND ol_o_id = o_id AND ol_i_id = i_id AND su_nationkey = n_nationkey
        AND i_data LIKE '%BB' GROUP BY n_name, EXTRACT(YEAR FROM o_entry_d) ORDER BY n_name, l_year DESC""",
    10: f"""SELECT c_id, c_last, SUM(ol_amount) AS revenue, c_city, c_phone, n_name
        FROM customer, oorder, order_line, nation
        WHERE c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id AND ol_w_id = o_w_id AND ol_d_id = o_d_id
        AND ol_o_id = o_id AND o_entry_d >= {T0} AND o_entry_d <= ol_delivery_d AND n_nationkey = {C_NATION}
        GROUP BY c_id, c_last, c_city, c_phone, n_name ORDER BY revenue DESC""",
    11: f"""SELECT s_i_id, SUM(s_order_cnt) AS ordercount FROM stock, supplier, nation
        WHERE {SUPP} = su_suppkey AND su_nationkey = n_nationkey AND n_name = 'Germany'
        GROUP BY s_i_id HAVING SUM(s_order_cnt) > (SELECT SUM(s_order_cnt) * 0.005 FROM stock, supplier, nation
            WHERE {SUPP} = su_suppkey AND su_nationkey = n_nationkey AND n_name = 'Germany')
        ORDER BY ordercount DESC""",
    12: """SELECT o_ol_cnt, SUM(CASE WHEN o_carrier_id = 1 OR o_carrier_id = 2 THEN 1 ELSE 0 END) AS high_line_count,
        SUM(CASE WHEN o_carrier_id <> 1 AND o_carrier_id <> 2 THEN 1 ELSE 0 END) AS low_line_count
        FROM oorder, order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
        AND o_entry_d <= ol_delivery_d AND ol_delivery_d < TIMESTAMP '2020-01-01 00:00:00'
        GROUP BY o_ol_cnt ORDER BY o_ol_cnt""",
    13: """SELECT c_count, COUNT(*) AS custdist FROM (SELECT c_id, COUNT(o_id) AS c_count FROM customer
        LEFT OUTER JOIN oorder ON (c_w_id = o_w_id AND c_d_id = o_d_id AND c_id = o_c_id AND o_carrier_id > 8)
        GROUP BY c_id) AS c_orders GROUP BY c_count ORDER BY custdist DESC, c_count DESC""",
    14: f"""SELECT 100.00 * SUM(CASE WHEN i_data LIKE 'PR%' THEN ol_amount ELSE 0 END) / (1 + SUM(ol_amount))
        AS promo_revenue FROM order_line, item WHERE ol_i_id = i_id AND ol_delivery_d >= {T0}
        AND ol_delivery_d < TIMESTAMP '2020-01-02 00:00:00'""",
    # the reference creates a view revenue0; tique does not version views, so it is a derived table (twice)
    15: f"""SELECT su_suppkey, su_name, su_address, su_phone, total_revenue FROM supplier,
        (SELECT {SUPP} AS supplier_no, SUM(ol_amount) AS total_revenue FROM order_line, stock
         WHERE ol_i_id = s_i_id AND ol_supply_w_id = s_w_id AND ol_delivery_d >= {T0} GROUP BY {SUPP}) AS revenue0
        WHERE su_suppkey = supplier_no AND total_revenue = (SELECT MAX(total_revenue) FROM
        (SELECT {SUPP} AS supplier_no, SUM(ol_amount) AS total_revenue FROM order_line, stock
         WHERE ol_i_id = s_i_id AND ol_supply_w_id = s_w_id AND ol_delivery_d >= {T0} GROUP BY {SUPP}) AS r1)
        ORDER BY su_suppkey""",
    16: f"""SELECT i_name, SUBSTRING(i_data FROM 1 FOR 3) AS brand, i_price, COUNT(DISTINCT {SUPP}) AS supplier_cnt
        FROM stock, item WHERE i_id = s_i_id AND i_data NOT LIKE 'zz%'
        AND {SUPP} NOT IN (SELECT su_suppkey FROM supplier WHERE su_comment LIKE '%bad%')
        GROUP BY i_name, SUBSTRING(i_data FROM 1 FOR 3), i_price ORDER BY supplier_cnt DESC""",
    17: """SELECT SUM(ol_amount) / 2.0 AS avg_yearly FROM order_line,
        (SELECT i_id, AVG(ol_quantity) AS a FROM item, order_line WHERE i_data LIKE '%b' AND ol_i_id = i_id
         GROUP BY i_id) AS t WHERE ol_i_id = t.i_id AND ol_quantity < t.a""",
    18: """SELECT c_last, c_id, o_id, o_entry_d, o_ol_cnt, SUM(ol_amount) AS amount_sum
        FROM customer, oorder, order_line
        WHERE c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id AND ol_w_id = o_w_id AND ol_d_id = o_d_id
        AND ol_o_id = o_id GROUP BY o_id, o_w_id, o_d_id, c_id, c_last, o_entry_d, o_ol_cnt
        HAVING SUM(ol_amount) > 200 ORDER BY amount_sum DESC, o_entry_d""",
    # the reference repeats the join predicate inside each OR branch; factored out, it is the same query
    19: """SELECT SUM(ol_amount) AS revenue FROM order_line, item WHERE ol_i_id = i_id AND (
        (i_data LIKE '%a' AND ol_quantity >= 1 AND ol_quantity <= 10 AND i_price BETWEEN 1 AND 400000
         AND ol_w_id IN (1, 2, 3))
        OR (i_data LIKE '%b' AND ol_quantity >= 1 AND ol_quantity <= 10 AND i_price BETWEEN 1 AND 400000
         AND ol_w_id IN (1, 2, 4))
        OR (i_data LIKE '%c' AND ol_quantity >= 1 AND ol_quantity <= 10 AND i_price BETWEEN 1 AND 400000
         AND ol_w_id IN (1, 5, 3)))""",
    20: """SELECT su_name, su_address FROM supplier, nation WHERE su_suppkey IN
        (SELECT MOD(s_i_id * s_w_id, 10000) FROM stock, order_line
         WHERE s_i_id IN (SELECT i_id FROM item WHERE i_data LIKE 'co%') AND ol_i_id = s_i_id
         AND ol_delivery_d > TIMESTAMP '2010-05-23 12:00:00'
         GROUP BY s_i_id, s_w_id, s_quantity HAVING 2 * s_quantity > SUM(ol_quantity))
        AND su_nationkey = n_nationkey AND n_name = 'Germany' ORDER BY su_name""",
    21: f"""SELECT su_name, COUNT(*) AS numwait FROM supplier, order_line l1, oorder, stock, nation
        WHERE ol_o_id = o_id AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_w_id = s_w_id AND ol_i_id = s_i_id
        AND {SUPP} = su_suppkey AND l1.ol_delivery_d > o_entry_d
        AND NOT EXISTS (SELECT * FROM order_line l2 WHERE l2.ol_o_id = l1.ol_o_id AND l2.ol_w_id = l1.ol_w_id
                        AND l2.ol_d_id = l1.ol_d_id AND l2.ol_delivery_d > l1.ol_delivery_d)
        AND su_nationkey = n_nationkey AND n_name = 'Germany' GROUP BY su_name ORDER BY numwait DESC, su_name""",
    22: """SELECT SUBSTRING(c_state FROM 1 FOR 1) AS country, COUNT(*) AS numcust, SUM(c_balance) AS totacctbal
        FROM customer WHERE SUBSTRING(c_phone FROM 1 FOR 1) IN ('1', '2', '3', '4', '5', '6', '7')
        AND c_balance > (SELECT AVG(c_balance) FROM customer WHERE c_balance > 0.00
                         AND SUBSTRING(c_phone FROM 1 FOR 1) IN ('1', '2', '3', '4', '5', '6', '7'))
        AND NOT EXISTS (SELECT * FROM oorder WHERE o_c_id = c_id AND o_w_id = c_w_id AND o_d_id = c_d_id)
        GROUP BY SUBSTRING(c_state FROM 1 FOR 1) ORDER BY country""",
}
