-- yacobot's page analysis, the multidoc worker (docs/multidoc.md; docs/operations.md "yacobot:
-- page analysis"; docs/formats.md "Page analysis tables"). It follows the crawl archive and
-- keeps, per database (one node's):
--
-- * the templater's evidence: for each domain, on how many of its pages each block was seen.
--   The source keeps a table per domain; one table keyed by (domain, fingerprint) gives the
--   same locality (a domain's rows are one range of the primary key, read and written
--   together) without creating tables at run time. Counts only grow by whole pages, in the
--   transaction that moves the worker's position (multidoc_position): a page is never counted
--   twice, whatever kill -9 interrupts. Bounded: a cap of fingerprints per domain
--   (MultiDoc.MaxFingerprints, the least seen go first) and ageing (MultiDoc.ExpireDays: rows
--   not seen for that long are forgotten; a domain with no page for that long starts afresh).
-- * the analysis of each URL (multidoc_page);
-- * where the worker is in the archive (multidoc_position).

CREATE TABLE multidoc_domain (
    domain_key   BIGINT UNSIGNED NOT NULL COMMENT 'the domain''s key: first 8 bytes of the MD5 of the domain name, big-endian (as a URL id)',
    domain       VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'routing domain (url.domain)',
    pages        INT UNSIGNED NOT NULL COMMENT 'pages counted into the evidence since it began (since)',
    fingerprints INT UNSIGNED NOT NULL COMMENT 'multidoc_fingerprint rows of the domain as last counted (ageing makes it an overestimate until the cap recounts)',
    since        DATETIME NOT NULL COMMENT 'when the evidence began: its first page, or the first after it expired (UTC)',
    seen_on      DATE NOT NULL COMMENT 'the day a page was last counted (UTC); MultiDoc.ExpireDays before today: expired',
    PRIMARY KEY (domain_key),
    KEY ix_multidoc_domain_seen (seen_on)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='template evidence per domain: pages sampled';

CREATE TABLE multidoc_fingerprint (
    domain_key  BIGINT UNSIGNED NOT NULL COMMENT 'multidoc_domain.domain_key',
    fingerprint BIGINT UNSIGNED NOT NULL COMMENT 'XXH3-64 of a block''s normalised text and tag path (docs/multidoc.md)',
    pages       INT UNSIGNED NOT NULL COMMENT 'pages of the domain the block was on (once a page)',
    last_page   INT UNSIGNED NOT NULL COMMENT 'the domain''s page count when the block was last seen (the cap evicts the fewest pages, then the oldest)',
    seen_on     DATE NOT NULL COMMENT 'the day the block was last seen (UTC); MultiDoc.ExpireDays before today: expired',
    PRIMARY KEY (domain_key, fingerprint),
    KEY ix_multidoc_fingerprint_seen (seen_on)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='template evidence per domain: pages each block was seen on';

CREATE TABLE multidoc_page (
    id             BIGINT UNSIGNED NOT NULL COMMENT 'url.id of the page',
    outcome        TINYINT UNSIGNED NOT NULL COMMENT '1 analysed, 2 empty, 3 binary, 4 too large (MultiDoc.MaxBytes)',
    lang           VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'language of the main text: ru, en, cjk, other, unknown; NULL: not analysed',
    categories     TEXT NULL COMMENT 'category path from the root: catalog id:posterior, comma-separated (docs/formats.md); NULL: no model',
    category_names TEXT NULL COMMENT 'the same path''s names joined by " > ", for people',
    main_md5       CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'hex MD5 of the main text (UTF-8); NULL: not analysed',
    template_share FLOAT NULL COMMENT 'share of the blocks'' text the domain''s evidence calls template (0-1); NULL: not analysed',
    model_checksum INT UNSIGNED NULL COMMENT 'CRC-32C of the model file that classified the page; NULL: no model',
    analysed_at    DATETIME NOT NULL COMMENT 'when the page was last analysed (UTC)',
    counted_at     DATETIME NULL COMMENT 'when the page was counted into its domain''s evidence; NULL: never (not analysed)',
    archive_file   BIGINT UNSIGNED NOT NULL COMMENT 'segment file id of the archived copy analysed',
    archive_item   INT UNSIGNED NOT NULL COMMENT 'item index of that copy in its segment (from 1)',
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='what the page analysis made of each URL';

CREATE TABLE multidoc_position (
    node         VARCHAR(64) NOT NULL COMMENT 'the yacobot node (its node key)',
    store        VARCHAR(512) NOT NULL COMMENT 'the archive folder followed (Archive.Dir, resolved)',
    file_id      BIGINT UNSIGNED NOT NULL COMMENT 'segment file id of the next item to analyse (0: the oldest segment)',
    item_idx     INT UNSIGNED NOT NULL COMMENT 'its item index (from 1)',
    counted_file BIGINT UNSIGNED NOT NULL COMMENT 'the items before this position were counted into the evidence: a rewind moves file_id/item_idx back, not this, and the items it analyses again are not counted again',
    counted_item INT UNSIGNED NOT NULL COMMENT 'its item index',
    updated_at   DATETIME NOT NULL COMMENT 'when the position last moved (UTC)',
    PRIMARY KEY (node, store)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='where the page analysis is in each archive';
