-- A domain over MultiDoc.MaxFingerprints loses the rows seen on fewest pages, and of those the
-- least recently (the order DomainEvidence evicts in, docs/multidoc.md). Bound: domain_key,
-- how many rows (at most a bounded batch).
DELETE FROM multidoc_fingerprint
WHERE domain_key = ?
ORDER BY pages, last_page
LIMIT ?
