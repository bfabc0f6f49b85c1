-- qargfilter's scores of a batch of paths (docs/design.md#yacobot-qargfilter), each with its
-- evidence, replacing older ones.
INSERT INTO query_args (path_hash, name, score, computed_at, pairs, equal_pairs)
VALUES (?, ?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE score = VALUES(score), computed_at = VALUES(computed_at),
    pairs = VALUES(pairs), equal_pairs = VALUES(equal_pairs)
