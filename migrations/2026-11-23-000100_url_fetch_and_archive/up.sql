-- yacobot's fetcher and archive (docs/design.md#yacobot-archive): where the last archived copy of a
-- page is, so that a page downloaded recently is re-indexed from the archive instead of being
-- downloaded again, and what the last fetch attempt did.

ALTER TABLE url
    ADD COLUMN archive_file BIGINT UNSIGNED NULL COMMENT 'segment file id of the last archived copy (UPDATE item); NULL: none',
    ADD COLUMN archive_item INT UNSIGNED NULL COMMENT 'item index of that copy in its segment (from 1)',
    ADD COLUMN last_fetch DATETIME NULL COMMENT 'last fetch attempt, whatever its outcome (UTC)',
    ADD COLUMN fetch_error VARCHAR(255) NULL COMMENT 'kind and reason of the last failed fetch; NULL after a success';
