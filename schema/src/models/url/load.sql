-- The loader's accumulating upsert of queue records into the frontier
-- (docs/design.md#yacobot-loader).
-- Bound per row: id, url, domain, path_hash, hits, download_prio (hits x NEW_URL_BOOST),
-- updatetag, first_seen (now), last_hit, next_indexed (now); then NEW_URL_BOOST once.
-- A new URL is inserted as bound. A known one adds its hits; its priority is its hits, times
-- NEW_URL_BOOST while it was never downloaded; a changed non-empty updatetag makes it due now
-- and forgets where its archived copy is: the page changed, so the crawler downloads it rather
-- than re-indexing a stale copy from the archive.
-- Hits for a URL marked for withdrawal (docs/design.md#yacobot-withdrawal) keep it: the mark goes.
-- MySQL applies the assignments left to right, each one seeing those before it: next_indexed
-- compares the old updatetag, download_prio uses the new hits.
INSERT INTO url (id, url, domain, path_hash, hits, download_prio, updatetag, first_seen, last_hit, next_indexed)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE
    withdraw = NULL,
    next_indexed = IF(VALUES(updatetag) <> '' AND VALUES(updatetag) <> updatetag,
                      LEAST(next_indexed, VALUES(next_indexed)), next_indexed),
    archive_item = IF(VALUES(updatetag) <> '' AND VALUES(updatetag) <> updatetag, NULL, archive_item),
    archive_file = IF(VALUES(updatetag) <> '' AND VALUES(updatetag) <> updatetag, NULL, archive_file),
    updatetag = IF(VALUES(updatetag) = '', updatetag, VALUES(updatetag)),
    hits = LEAST(hits + VALUES(hits), 4294967295),
    download_prio = IF(last_downloaded IS NULL, hits * ?, hits),
    last_hit = GREATEST(last_hit, VALUES(last_hit))
