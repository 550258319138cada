-- Deterministic SQLite workload for deb-sqlite3: inserts, an index, joins, aggregates, updates.
CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 300000)
INSERT INTO t SELECT i, (i * 7919) % 100003, printf('row-%08d-%x', i, (i * 2654435761) % 4294967296), i * 0.5 FROM s;
CREATE INDEX t_a ON t(a);
CREATE TABLE u AS SELECT a, count(*) AS n, sum(c) AS sc FROM t GROUP BY a;
UPDATE t SET c = c * 1.5 WHERE a % 3 = 0;
DELETE FROM t WHERE a % 11 = 0;
SELECT 'rows', count(*) FROM t;
SELECT 'join', count(*), sum(u.n) FROM t JOIN u ON t.a = u.a WHERE t.id % 5 = 0;
SELECT 'like', count(*) FROM t WHERE b LIKE '%-0000%7%';
SELECT 'order', group_concat(id) FROM (SELECT id FROM t ORDER BY b DESC LIMIT 5);
SELECT 'sum', printf('%.1f', sum(c)) FROM t;
