DROP TABLE query_arg_probe;
ALTER TABLE query_args DROP COLUMN equal_pairs, DROP COLUMN pairs;
DROP TABLE withdraw_position;
DROP INDEX ix_url_path ON url;
DROP INDEX ix_url_withdraw ON url;
ALTER TABLE url DROP COLUMN withdraw;
