-- Forgets blocks not seen since before the expiry day (MultiDoc.ExpireDays), a bounded batch
-- at a time, through the index on seen_on. Bound: the expiry day, the batch.
DELETE FROM multidoc_fingerprint
WHERE seen_on < ?
LIMIT ?
