-- Counts a batch's pages into their domains. Bound per row: domain_key, domain, pages (of the
-- batch), fingerprints (rows the batch inserted), since (now), seen_on (today); then the
-- expiry day twice. A domain last seen before the expiry day starts afresh: its evidence
-- begins now and holds the batch's pages only (its old fingerprint rows read as absent too).
-- MySQL applies the assignments left to right: `since` and `pages` read the old seen_on.
INSERT INTO multidoc_domain (domain_key, domain, pages, fingerprints, since, seen_on)
VALUES (?, ?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE
    since = IF(seen_on < ?, VALUES(since), since),
    pages = IF(seen_on < ?, 0, pages) + VALUES(pages),
    fingerprints = fingerprints + VALUES(fingerprints),
    seen_on = VALUES(seen_on)
