-- Forgets domains with no page counted since before the expiry day, a bounded batch at a time
-- (their fingerprints, last seen no later, go first). Bound: the expiry day, the batch.
DELETE FROM multidoc_domain
WHERE seen_on < ?
LIMIT ?
