-- The path binder's stubs (docs/bindings.md "The path binder"; docs/operations.md "yacobot:
-- path binder"; docs/formats.md "Path stub table"): one row per ad-server item the path
-- binder last shipped — a site section's stub, or a host's insignificant query arguments —
-- with its MD5, so that an unchanged one is not shipped again and one no longer built is
-- withdrawn. How far its store is reflected here is a binding_position row (the store is
-- PathBinder.Dir).

CREATE TABLE path_stub (
    id       BIGINT UNSIGNED NOT NULL COMMENT 'the item''s key: the section''s id (stub) or the host''s id (query_args), first 8 bytes of the MD5 of its name, big-endian',
    kind     TINYINT UNSIGNED NOT NULL COMMENT '1 a section''s stub, 2 a host''s insignificant query arguments',
    domain   VARCHAR(253) NOT NULL COMMENT 'routing domain (url.domain) of the pages it was made from',
    host     VARCHAR(255) NOT NULL COMMENT 'the host (with a non-default port)',
    prefix   VARCHAR(1024) NOT NULL COMMENT 'the section''s path prefix, from / and ending in / (empty for query_args)',
    urls     INT UNSIGNED NOT NULL COMMENT 'the section''s bound pages the stub was made from (query_args: the arguments)',
    md5      CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'hex MD5 of item: what was last shipped',
    item     MEDIUMTEXT NOT NULL COMMENT 'the ad-server item (docs/formats.md "Ad-server items"), its canonical form',
    built_at DATETIME NOT NULL COMMENT 'when this item was built (UTC)',
    PRIMARY KEY (id),
    KEY ix_path_stub_domain (domain)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='the path binder''s stubs and query_args items, as last shipped';
