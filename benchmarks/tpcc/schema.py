"""The TPC-C schema (spec 1.3), one DDL for every system: plain SQL types MonetDB, PostgreSQL and tique share."""

from __future__ import annotations

TABLES: dict[str, str] = {
    "warehouse": """CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_name VARCHAR(10), w_street_1 VARCHAR(20),
        w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4),
        w_ytd DECIMAL(12,2))""",
    "district": """CREATE TABLE district (d_id INT, d_w_id INT, d_name VARCHAR(10), d_street_1 VARCHAR(20),
        d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4,4),
        d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))""",
    "customer": """CREATE TABLE customer (c_id INT, c_d_id INT, c_w_id INT, c_first VARCHAR(16), c_middle CHAR(2),
        c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2),
        c_zip CHAR(9), c_phone CHAR(16), c_since TIMESTAMP, c_credit CHAR(2), c_credit_lim DECIMAL(12,2),
        c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt INT,
        c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id))""",
    "history": """CREATE TABLE history (h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT,
        h_date TIMESTAMP, h_amount DECIMAL(6,2), h_data VARCHAR(24))""",
    "oorder": """CREATE TABLE oorder (o_id INT, o_d_id INT, o_w_id INT, o_c_id INT, o_entry_d TIMESTAMP,
        o_carrier_id INT, o_ol_cnt INT, o_all_local INT, PRIMARY KEY (o_w_id, o_d_id, o_id))""",
    "new_order": """CREATE TABLE new_order (no_o_id INT, no_d_id INT, no_w_id INT,
        PRIMARY KEY (no_w_id, no_d_id, no_o_id))""",
    "item": """CREATE TABLE item (i_id INT PRIMARY KEY, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2),
        i_data VARCHAR(50))""",
    "stock": """CREATE TABLE stock (s_i_id INT, s_w_id INT, s_quantity INT, s_dist_01 CHAR(24), s_dist_02 CHAR(24),
        s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24),
        s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd INT, s_order_cnt INT, s_remote_cnt INT,
        s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))""",
    "order_line": """CREATE TABLE order_line (ol_o_id INT, ol_d_id INT, ol_w_id INT, ol_number INT, ol_i_id INT,
        ol_supply_w_id INT, ol_delivery_d TIMESTAMP, ol_quantity INT, ol_amount DECIMAL(6,2), ol_dist_info CHAR(24),
        PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))""",
}

# CH-benCHmark's extra tables: read-only, so tique is told they need no versions (a "plain" table is an ordinary
# MonetDB table behind tique; the comment means nothing to the other systems)
PLAIN = " -- tique: plain"
CH_TABLES: dict[str, str] = {
    "region": "CREATE TABLE region (r_regionkey INT PRIMARY KEY, r_name CHAR(55), r_comment CHAR(152))" + PLAIN,
    "nation": """CREATE TABLE nation (n_nationkey INT PRIMARY KEY, n_name CHAR(25), n_regionkey INT,
        n_comment CHAR(152))"""
    + PLAIN,
    "supplier": """CREATE TABLE supplier (su_suppkey INT PRIMARY KEY, su_name CHAR(25), su_address VARCHAR(40),
        su_nationkey INT, su_phone CHAR(15), su_acctbal DECIMAL(12,2), su_comment CHAR(101))"""
    + PLAIN,
}

ALL_TABLES = {**TABLES, **CH_TABLES}
