-- The crawl archive's compaction asks which URLs have their copy in the segments the retention
-- floor is about to pass (`archive_file` in a range) at every seal: without this index that is
-- a scan of the whole frontier. It costs one more index entry to move when a copy is booked.
CREATE INDEX ix_url_archive ON url (archive_file, archive_item);
