DROP INDEX ix_url_last_hit ON url;
ALTER TABLE multidoc_page DROP KEY ix_multidoc_page_group, DROP COLUMN dup_group;
DROP TABLE multidoc_group;
