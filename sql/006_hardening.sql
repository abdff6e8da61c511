-- 006_hardening: a placeholder on the providers branch only.
--
-- The hardening branch owns migration 006; tools/embed-sql.pl wants the
-- numbers without gaps, so this branch carries an empty one to build and
-- test 007. When the branches are merged, the hardening branch's file
-- replaces this one (take theirs).
SELECT 1;
