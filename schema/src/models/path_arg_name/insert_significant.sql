-- Arguments met for the first time are significant (003_9d337de18bf22ec6.txt). A rule that
-- exists by now (the qargfilter import, another loader) is left as it is.
INSERT INTO path_arg_name (path_hash, name, significant, updated_at)
VALUES (?, ?, 1, ?) /*repeat*/
ON DUPLICATE KEY UPDATE path_hash = path_hash
