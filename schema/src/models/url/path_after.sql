-- The rest of one path's URLs after a given id (a path with more URLs than a batch), as
-- paths_from.sql reads them.
SELECT u.id, u.url, u.domain, u.path_hash, u.claim_expires, u.withdraw, m.main_md5, m.main_simhash
FROM url AS u
LEFT JOIN multidoc_page AS m ON m.id = u.id AND m.outcome = 1
WHERE u.path_hash = ? AND u.id > ?
ORDER BY u.id
LIMIT ?
