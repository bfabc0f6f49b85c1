-- Arguments met for the first time are significant (docs/design.md#yacobot-query-arguments).
-- A rule that exists by now (the qargfilter import, another loader) is left as it is.
INSERT INTO path_arg_name (path_hash, name, significant, updated_at)
VALUES (?, ?, 1, ?) /*repeat*/
ON DUPLICATE KEY UPDATE path_hash = path_hash
