-- 0017: the public verify's rate-limit counters leave the database for Spin's key-value store
-- (`default`, listed in spin.toml; components/common/src/counters.rs; docs/verification.md, "Rate
-- limit"): counting a call no longer commits to the database every other request reads. 0016's
-- `verify_windows` is dropped; its counters were worth one minute at most.
--
-- Safe to run more than once: real Spin runs every `--sqlite @file` on each start (and so
-- re-creates 0016's empty table before this file drops it again).

DROP TABLE IF EXISTS verify_windows;
