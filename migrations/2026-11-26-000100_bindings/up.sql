-- Ad bindings (docs/bindings.md; docs/operations.md "yacobot: bindings"; docs/formats.md
-- "Binding tables"):
--
-- * the dictionaries an operator loads (`yacobot dict load KIND FILE`): one row per version
--   (binding_dict) and its phrases (binding_dict_phrase). The newest row of a kind is the one in
--   force; loading one is one transaction, so a running worker sees the old version or the new,
--   never a half. Its age is what the re-index bookkeeping's Url.DictAge rule reads.
-- * each URL's current binding (binding_page): its ad-server item, its MD5 (an unchanged
--   binding is not shipped again), the tragic flag, the dictionary versions;
-- * where the bindings archive is (binding_position): items of the bindings store before this
--   place are reflected in binding_page; those after it were appended by a batch that was not
--   committed (recovery compares them, so that no item is appended twice).

CREATE TABLE binding_dict (
    id        INT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'the load',
    kind      TINYINT UNSIGNED NOT NULL COMMENT '1 direct, 2 market, 3 media (the ad-server item type codes)',
    version   CHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT '64 bits of the MD5 of the normalised content, 16 hex digits (focuser_bind::dict)',
    loaded_at DATETIME NOT NULL COMMENT 'when it was loaded (UTC)',
    file_name VARCHAR(255) NOT NULL COMMENT 'the file it was loaded from (its name, for people)',
    phrases   INT UNSIGNED NOT NULL COMMENT 'its phrases (binding_dict_phrase rows)',
    checksum  CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'hex MD5 of the file''s bytes',
    PRIMARY KEY (id),
    KEY ix_binding_dict_kind (kind, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='ad dictionaries loaded, one row per load; the newest of a kind is in force';

CREATE TABLE binding_dict_phrase (
    dict_id     INT UNSIGNED NOT NULL COMMENT 'binding_dict.id',
    line        INT UNSIGNED NOT NULL COMMENT 'the phrase''s line in the file',
    phrase      VARCHAR(255) NOT NULL COMMENT 'the phrase as the file writes it (trimmed, white space collapsed): what is delivered',
    stems       VARCHAR(1024) NOT NULL COMMENT 'its stems as the tokenizer makes them, separated by spaces (what pages are matched on)',
    advertisers INT UNSIGNED NOT NULL COMMENT 'advertisers bidding on it (direct; 0 otherwise)',
    category    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'the catalog category it points at, if any',
    PRIMARY KEY (dict_id, line)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='the phrases of each dictionary loaded';

CREATE TABLE binding_page (
    id            BIGINT UNSIGNED NOT NULL COMMENT 'url.id of the page (the doc id of its items)',
    md5           CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'hex MD5 of item: the last binding shipped for the page',
    item          MEDIUMTEXT NOT NULL COMMENT 'the binding''s ad-server item (docs/formats.md "Ad-server items"), its canonical form',
    tragic        TINYINT UNSIGNED NOT NULL COMMENT 'the tragic filter''s flag: 1 no contextual phrases',
    phrases       INT UNSIGNED NOT NULL COMMENT 'phrases bound, all types together',
    dict_versions VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'kind:version of each dictionary it was bound with, comma-separated',
    bound_at      DATETIME NOT NULL COMMENT 'when this binding was made (UTC)',
    PRIMARY KEY (id),
    KEY ix_binding_page_tragic (tragic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='the current binding of each URL';

CREATE TABLE binding_position (
    node       VARCHAR(64) NOT NULL COMMENT 'the yacobot node (its node key)',
    store      VARCHAR(512) NOT NULL COMMENT 'the bindings store (Bindings.Dir, resolved)',
    file_id    BIGINT UNSIGNED NOT NULL COMMENT 'segment file id: the store''s items before this place are in binding_page (0: the oldest segment)',
    item_idx   INT UNSIGNED NOT NULL COMMENT 'its item index (from 1)',
    updated_at DATETIME NOT NULL COMMENT 'when it last moved (UTC)',
    PRIMARY KEY (node, store)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='how far the bindings store is reflected in binding_page';
