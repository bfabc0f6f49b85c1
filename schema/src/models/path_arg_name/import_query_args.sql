-- The qargfilter import (docs/design.md#yacobot-qargfilter): every score computed since the bound
-- time becomes a rule, insignificant (0) from the threshold on, significant (1) below it, always
-- replacing the rule there was.
INSERT INTO path_arg_name (path_hash, name, significant, updated_at)
SELECT path_hash, name, IF(score >= ?, 0, 1), ?
FROM query_args
WHERE computed_at >= ?
ON DUPLICATE KEY UPDATE significant = VALUES(significant), updated_at = VALUES(updated_at)
