-- Partner data feeds ("vertical result" resources) and their items
-- (docs/design.md#yacobot-resources).

CREATE TABLE vr_resource (
    id              INT UNSIGNED     NOT NULL AUTO_INCREMENT COMMENT 'resource id (res_id elsewhere)',
    class_id        INT UNSIGNED     NOT NULL COMMENT 'resource class; selects its open_xml_format rules',
    res_name        VARCHAR(255)     NOT NULL COMMENT 'name shown to operators',
    data_group      VARCHAR(64)      NOT NULL DEFAULT '' COMMENT 'group the items are indexed under',
    data_from       TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'where the data comes from: 0 partner feed over HTTP (others reserved)',
    frequency       INT UNSIGNED     NOT NULL DEFAULT 86400 COMMENT 'seconds between automatic runs',
    is_manual       TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: runs only when an operator asks (manual_update = 1)',
    manual_update   TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: run now (set by yacobot resource fetch-now), cleared after the run',
    res_status      TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT '1 enabled, 0 disabled',
    priority        INT              NOT NULL DEFAULT 0 COMMENT 'higher runs first when several are due',
    fetch_status    TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0 never run, 1 ok, 2 running, 4 error',
    fetch_detail    TEXT             NULL COMMENT 'short report of the last run: failed source, item counts, up to 20 failed keys',
    fetch_time      DATETIME         NULL COMMENT 'when the current or last run started (UTC)',
    last_fetch_time DATETIME         NULL COMMENT 'when the last run ended (UTC); due again at last_fetch_time + frequency',
    max_items       INT UNSIGNED     NOT NULL DEFAULT 0 COMMENT 'cap on items per run; 0: no cap',
    claimed_by      VARCHAR(64)      NULL COMMENT 'worker running the resource now (node/pid); NULL: idle',
    claim_expires   DATETIME         NULL COMMENT 'a claim older than this is considered dead and may be taken (UTC)',
    created_at      DATETIME         NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when the resource was added (UTC)',
    PRIMARY KEY (id),
    UNIQUE KEY uq_vr_resource_name (res_name),
    -- The scan: manual ones with manual_update = 1, automatic ones by last_fetch_time.
    KEY ix_vr_resource_manual (res_status, manual_update),
    KEY ix_vr_resource_auto (res_status, is_manual, last_fetch_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='partner data feeds';

CREATE TABLE vr_open_datasource (
    id          INT UNSIGNED  NOT NULL AUTO_INCREMENT COMMENT 'data source id',
    res_id      INT UNSIGNED  NOT NULL COMMENT 'vr_resource.id',
    name        VARCHAR(255)  NOT NULL COMMENT 'name used in fetch_detail reports',
    priority    INT           NOT NULL DEFAULT 0 COMMENT 'sources of a resource are processed by priority, highest first',
    sitemap_url VARCHAR(1024) NOT NULL COMMENT 'plain URL list or XML urlset/sitemapindex',
    sitemap_md5 CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'hex MD5 of the last sitemap processed; unchanged means skip (automatic runs)',
    created_at  DATETIME      NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when the source was added (UTC)',
    PRIMARY KEY (id),
    UNIQUE KEY uq_vr_open_datasource_name (res_id, name),
    KEY ix_vr_open_datasource_res (res_id, priority)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='data sources (sitemaps) of a resource';

CREATE TABLE resource_status (
    id             BIGINT UNSIGNED   NOT NULL AUTO_INCREMENT COMMENT 'feed URL id (vr_data.status_id)',
    res_id         INT UNSIGNED      NOT NULL COMMENT 'vr_resource.id',
    data_source_id INT UNSIGNED      NOT NULL COMMENT 'vr_open_datasource.id that lists the URL',
    url            VARCHAR(255)      NOT NULL COMMENT 'feed URL (shorter than 255 bytes by the sitemap rules)',
    res_status     TINYINT UNSIGNED  NOT NULL DEFAULT 1 COMMENT '1 listed in the sitemap, 0 retired (no longer listed)',
    last_fetch     DATETIME          NULL COMMENT 'last fetch attempt (UTC)',
    http_status    SMALLINT UNSIGNED NULL COMMENT 'HTTP status of the last fetch',
    items          INT UNSIGNED      NOT NULL DEFAULT 0 COMMENT 'items cut out of the last fetch',
    error          VARCHAR(255)      NULL COMMENT 'reason of the last failure; NULL after a success',
    PRIMARY KEY (id),
    UNIQUE KEY uq_resource_status_url (res_id, url),
    KEY ix_resource_status_source (data_source_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='every feed URL of a resource';

CREATE TABLE open_xml_format (
    id           INT UNSIGNED     NOT NULL AUTO_INCREMENT COMMENT 'rule id',
    class_id     INT UNSIGNED     NOT NULL COMMENT 'resource class the rule belongs to (vr_resource.class_id)',
    label_name   VARCHAR(128)     NOT NULL COMMENT 'field name in the item',
    parent_label VARCHAR(255)     NOT NULL DEFAULT '' COMMENT 'element that encloses one item, e.g. item or channel/item',
    xpath        VARCHAR(512)     NOT NULL DEFAULT '' COMMENT 'path of the field below the item element; empty: label_name',
    is_key       TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: the field is the item key (vr_data.keyword)',
    is_index     TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: the field is indexed',
    is_fullhit   TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: a query must match the field in full',
    is_mark      TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: the field is an annotation shown with the result',
    is_required  TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: an item without the field fails validation',
    index_type   TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0 keyword index, 1 full-text index',
    group_type   TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0 none; 1-3 grouping of repeated fields',
    PRIMARY KEY (id),
    UNIQUE KEY uq_open_xml_format_field (class_id, parent_label, label_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='how items are cut out of a resource class''s XML';

CREATE TABLE vr_data (
    id             BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT COMMENT 'item row id',
    res_id         INT UNSIGNED     NOT NULL COMMENT 'vr_resource.id',
    status_id      BIGINT UNSIGNED  NULL COMMENT 'resource_status.id of the feed URL the item came from',
    data_source_id INT UNSIGNED     NULL COMMENT 'vr_open_datasource.id of that URL',
    keyword        VARCHAR(255)     NOT NULL COMMENT 'the item key (is_key field)',
    optword        VARCHAR(255)     NOT NULL DEFAULT '' COMMENT 'optional secondary key words',
    synonym        VARCHAR(1024)    NOT NULL DEFAULT '' COMMENT 'synonyms of the keyword',
    md5_sum        CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'hex MD5 of the item as emitted; decides new / changed / same',
    doc_id         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'doc id of the item in the segments (stable across runs)',
    data_status    TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT '1 live, 0 deleted (gone from the feed)',
    status         TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '0 change not yet emitted to the segments, 1 emitted',
    update_type    TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT 'last change: 1 insert, 2 update, 3 delete',
    valid_status   TINYINT UNSIGNED NOT NULL DEFAULT 1 COMMENT '1 valid, 0 failed validation',
    valid_info     VARCHAR(255)     NOT NULL DEFAULT '' COMMENT 'why validation failed',
    content        MEDIUMTEXT       NULL COMMENT 'the item as emitted to the segments',
    create_date    DATETIME         NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'first seen (UTC)',
    update_date    DATETIME         NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'last change (UTC)',
    PRIMARY KEY (id),
    UNIQUE KEY uq_vr_data_item (res_id, keyword),
    -- Counts per resource, and the changes still to emit after a crash.
    KEY ix_vr_data_res_status (res_id, data_status, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='one row per feed item';

CREATE TABLE process_timestamp (
    id          BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT COMMENT 'run id',
    res_id      INT UNSIGNED     NOT NULL COMMENT 'vr_resource.id',
    is_manual   TINYINT(1)       NOT NULL DEFAULT 0 COMMENT '1: started by manual_update',
    status      TINYINT UNSIGNED NOT NULL DEFAULT 2 COMMENT '2 running, 1 ok, 4 error (as vr_resource.fetch_status)',
    fetch_start DATETIME         NULL COMMENT 'fetch stage start (UTC)',
    fetch_end   DATETIME         NULL COMMENT 'fetch stage end (UTC)',
    write_start DATETIME         NULL COMMENT 'write stage start (UTC)',
    write_end   DATETIME         NULL COMMENT 'write stage end (UTC)',
    items       INT UNSIGNED     NOT NULL DEFAULT 0 COMMENT 'items cut out of the feed',
    inserted    INT UNSIGNED     NOT NULL DEFAULT 0 COMMENT 'new items',
    updated     INT UNSIGNED     NOT NULL DEFAULT 0 COMMENT 'changed items',
    deleted     INT UNSIGNED     NOT NULL DEFAULT 0 COMMENT 'items marked deleted',
    failed_keys INT UNSIGNED     NOT NULL DEFAULT 0 COMMENT 'items without their key or a required field',
    PRIMARY KEY (id),
    KEY ix_process_timestamp_res (res_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='one row per fetch run of a resource';

CREATE TABLE vr_update_info (
    id              BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT COMMENT 'row id',
    res_id          INT UNSIGNED     NOT NULL COMMENT 'vr_resource.id',
    created_at      DATETIME         NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when the run ended (UTC)',
    status          TINYINT UNSIGNED NOT NULL COMMENT 'run result: 1 ok, 4 error',
    item_count      INT UNSIGNED     NOT NULL COMMENT 'live items after the run',
    last_item_count INT UNSIGNED     NOT NULL COMMENT 'live items before the run',
    detail          VARCHAR(1024)    NOT NULL DEFAULT '' COMMENT 'short explanation of the change',
    PRIMARY KEY (id),
    KEY ix_vr_update_info_res (res_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='a row each time a run changes a resource''s item count';
