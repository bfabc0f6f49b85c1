-- Counts a batch's pages into the blocks they showed (docs/formats.md "Page analysis
-- tables"). Bound per row: domain_key, fingerprint, pages (of the batch the block was on),
-- last_page (the domain's page count at the last of them), seen_on (today); then the expiry
-- day once. A row last seen before the expiry day counts as absent: it starts again from the
-- batch's pages. MySQL applies the assignments left to right: `pages` reads the old seen_on.
INSERT INTO multidoc_fingerprint (domain_key, fingerprint, pages, last_page, seen_on)
VALUES (?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE
    pages = IF(seen_on < ?, 0, pages) + VALUES(pages),
    last_page = VALUES(last_page),
    seen_on = VALUES(seen_on)
