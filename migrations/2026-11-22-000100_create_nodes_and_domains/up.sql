-- Crawler nodes and the domain map the master routes by (docs/design.md#master-cycle).
-- No foreign keys anywhere in this schema: a domain may stay mapped to a node that is gone
-- (the master then re-assigns it), per-node databases hold only part of the rows, and sharded
-- MySQL-compatible engines (Vitess, TiDB) handle foreign keys poorly or not at all.

CREATE TABLE yacobot_node (
    id         INT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'node id; the master writes its queue files to queue_dir/<id>/',
    name       VARCHAR(64)  NOT NULL COMMENT 'short unique node name, e.g. yb01',
    host       VARCHAR(255) NOT NULL COMMENT 'host:port of the node''s reader --recv inbox (where sendfile ships queue files)',
    enabled    TINYINT(1)   NOT NULL DEFAULT 1 COMMENT '1: the master routes to this node; 0: its domains are re-assigned',
    created_at DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when the node was added (UTC)',
    PRIMARY KEY (id),
    UNIQUE KEY uq_yacobot_node_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='crawler nodes the master may route domains to';

CREATE TABLE partner_domain (
    domain      VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'host lower-cased, IDN in punycode, leading www. removed',
    yacobot_id  INT UNSIGNED NOT NULL COMMENT 'yacobot_node.id that owns the domain',
    assigned_by VARCHAR(64)  NOT NULL COMMENT 'who assigned it: a master name (least-loaded rule) or admin:<user>',
    created_at  DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'first assignment (UTC)',
    updated_at  DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'last (re-)assignment (UTC)',
    PRIMARY KEY (domain),
    KEY ix_partner_domain_node (yacobot_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='which crawler node owns a domain (one row per domain)';
