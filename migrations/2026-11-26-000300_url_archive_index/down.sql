DROP INDEX ix_url_archive ON url;
