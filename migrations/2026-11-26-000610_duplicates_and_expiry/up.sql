-- Duplicates by content (issue 27, the source's md5.db; docs/multidoc.md "Duplicate groups")
-- and the frontier's expiry (Url.ExpireDays; docs/operations.md "yacobot: expiry").
--
-- A group is the pages of one routing domain whose main text is the same or near (main_simhash
-- at most 3 bits from the group's). Its first page is analysed and bound; the pages that join
-- it later are weighed (their main text is what tells) but not classified and not bound: they
-- share the representative's categories and binding. The four 16-bit bands of the group's
-- fingerprint are indexed, so that the groups near a page are found by equal bands (two
-- fingerprints 3 bits apart agree on one band at least) rather than by comparing every pair.

CREATE TABLE multidoc_group (
    id         BIGINT UNSIGNED NOT NULL COMMENT 'the group: XXH3-64 of its domain_key and simhash (8 bytes each, big-endian)',
    domain_key BIGINT UNSIGNED NOT NULL COMMENT 'multidoc_domain.domain_key of its pages: groups are per routing domain',
    simhash    BIGINT UNSIGNED NOT NULL COMMENT 'the group''s text: the main_simhash of its first page',
    band0      SMALLINT UNSIGNED NOT NULL COMMENT 'bits 63-48 of simhash',
    band1      SMALLINT UNSIGNED NOT NULL COMMENT 'bits 47-32 of simhash',
    band2      SMALLINT UNSIGNED NOT NULL COMMENT 'bits 31-16 of simhash',
    band3      SMALLINT UNSIGNED NOT NULL COMMENT 'bits 15-0 of simhash',
    rep        BIGINT UNSIGNED NOT NULL COMMENT 'url.id of the page whose categories and binding the group''s pages share: its first page; when that one leaves, the group''s smallest url.id',
    created_at DATETIME NOT NULL COMMENT 'when its first page was analysed (UTC)',
    PRIMARY KEY (id),
    KEY ix_multidoc_group_band0 (domain_key, band0),
    KEY ix_multidoc_group_band1 (domain_key, band1),
    KEY ix_multidoc_group_band2 (domain_key, band2),
    KEY ix_multidoc_group_band3 (domain_key, band3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='duplicate groups: pages of a domain whose main text is the same or near';

ALTER TABLE multidoc_page
    ADD COLUMN dup_group BIGINT UNSIGNED NULL COMMENT 'multidoc_group.id of the page''s group (its representative''s too); NULL: not analysed, or no word in its main text' AFTER main_simhash,
    ADD KEY ix_multidoc_page_group (dup_group);

-- The expiry's selection: URLs whose last hit is older than Url.ExpireDays, oldest first.
CREATE INDEX ix_url_last_hit ON url (last_hit);
