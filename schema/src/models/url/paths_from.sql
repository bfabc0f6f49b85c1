-- qargfilter's read of the frontier (docs/design.md#yacobot-qargfilter): the URLs of the paths
-- from the bound one on, a path's rows together (ix_url_path gives them in path and id order),
-- each with the fingerprints of its main text when MultiDoc analysed it.
SELECT u.id, u.url, u.domain, u.path_hash, u.claim_expires, u.withdraw, m.main_md5, m.main_simhash
FROM url AS u
LEFT JOIN multidoc_page AS m ON m.id = u.id AND m.outcome = 1
WHERE u.path_hash >= ?
ORDER BY u.path_hash, u.id
LIMIT ?
